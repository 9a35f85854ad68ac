#pragma once
/// \file
/// What a rank wrote to its TORCHELASTIC_ERROR_FILE: PyTorch's `@record` (torch.distributed.
/// elastic.multiprocessing.errors) writes the exception that ended the rank there as JSON,
/// `{"message": {"message": "<Type>: <text>", "extraInfo": {"py_callstack": "...",
/// "timestamp": "..."}}}`. The failure report shows it, as torchrun's does.

#include <string>
#include <string_view>

namespace ferry {

struct TorchError {
  std::string message;    ///< "RuntimeError: boom"
  std::string traceback;  ///< the Python traceback, "" when the file has none
};

/// The error in an error file's text. A file that is not that JSON still says something:
/// its first line becomes the message.
TorchError parse_torch_error(std::string_view text);

}  // namespace ferry
