#include "ferry/frontend/torch_error.hpp"

#include <nlohmann/json.hpp>

#include "ferry/common/text.hpp"

namespace ferry {

TorchError parse_torch_error(std::string_view text) {
  TorchError e;
  auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_object() && doc.contains("message")) {
    const auto& m = doc["message"];
    if (m.is_string()) {
      e.message = m.get<std::string>();
    } else if (m.is_object()) {
      if (m.contains("message") && m["message"].is_string())
        e.message = m["message"].get<std::string>();
      if (m.contains("extraInfo") && m["extraInfo"].is_object()) {
        const auto& info = m["extraInfo"];
        if (info.contains("py_callstack") && info["py_callstack"].is_string())
          e.traceback = info["py_callstack"].get<std::string>();
      }
    }
    if (!e.message.empty() || !e.traceback.empty()) return e;
  }
  const std::string_view first = text.substr(0, text.find('\n'));
  e.message = trim(first);
  return e;
}

}  // namespace ferry
