// --ship-ferryd's values, apart from the shipping itself: the job file's parser (and its
// fuzzer) read them without the rest of the transport.
#include <string>

#include "ferry/transport/ferryd_shipment.hpp"

namespace ferry {

Result<ShipMode> parse_ship_mode(std::string_view text) {
  if (text == "auto") return ShipMode::kAuto;
  if (text == "always") return ShipMode::kAlways;
  if (text == "never") return ShipMode::kNever;
  return make_error("'" + std::string(text) + "' is not auto, always or never");
}

}  // namespace ferry
