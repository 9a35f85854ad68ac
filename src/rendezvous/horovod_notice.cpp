#include "ferry/rendezvous/horovod_notice.hpp"

#include <algorithm>
#include <array>
#include <string>

namespace ferry {
namespace {

Result<std::string> base64_decode(std::string_view in) {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=' || c == '\n' || c == '\r') continue;
    const size_t v = kAlphabet.find(c);
    if (v == std::string_view::npos) return make_error("not base64");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

uint32_t le(std::string_view s, size_t at, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i)
    v |= static_cast<uint32_t>(static_cast<uint8_t>(s[at + i])) << (8 * i);
  return v;
}

// An (address, port) pair: a port a worker could listen on, at an address that is text (an
// IP); any rank may PUT any body.
Status add_address(WorkerAddresses& out, const std::string& address, uint32_t port) {
  if (port < 1 || port > 65535)
    return make_error("port " + std::to_string(port) + " in the worker's address");
  const bool text = !address.empty() && std::all_of(address.begin(), address.end(), [](char c) {
    return static_cast<unsigned char>(c) > 0x20 && static_cast<unsigned char>(c) < 0x7f;
  });
  if (!text) return make_error("an address in the worker's address is not text");
  out.addresses.emplace_back(address, static_cast<int>(port));
  return {};
}

}  // namespace

// A walk over the opcodes cloudpickle uses for this value: strings followed by an integer are an
// (ip, port) pair, a 32-byte bytes object is the key. Anything else is refused.
Result<WorkerAddresses> parse_worker_addresses(std::string_view base64_body) {
  auto raw = base64_decode(base64_body);
  if (!raw) return raw.error();
  const std::string& p = *raw;
  WorkerAddresses out;
  std::string last_text;
  bool have_text = false;
  size_t i = 0;
  auto need = [&](size_t n) { return i + n <= p.size(); };
  while (i < p.size()) {
    const auto op = static_cast<uint8_t>(p[i++]);
    // Memo stores between a string and its integer keep the pair together.
    if (op == 0x94) continue;
    if (op == 'q') {
      ++i;
      continue;
    }
    switch (op) {
      case 0x80:
        i += 1;
        break;  // PROTO
      case 0x95:
        i += 8;
        break;  // FRAME
      case '}':
      case ']':
      case '(':
      case ')':  // empties, MARK
      case 0x86:
      case 0x85:
      case 0x87:
      case 't':  // tuples
      case 'a':
      case 'e':
      case 's':
      case 'u':  // append(s), setitem(s)
        break;
      case 'h':
        i += 1;
        break;     // BINGET
      case 0x8c:   // SHORT_BINUNICODE
      case 'C': {  // SHORT_BINBYTES
        if (!need(1)) return make_error("truncated pickle");
        const size_t n = static_cast<uint8_t>(p[i++]);
        if (!need(n)) return make_error("truncated pickle");
        std::string s = p.substr(i, n);
        i += n;
        if (op == 'C') {
          out.key = std::move(s);
        } else {
          last_text = std::move(s);
          have_text = true;
          continue;
        }
        break;
      }
      case 'K':
      case 'M':
      case 'J': {  // BININT1, BININT2, BININT
        const size_t n = op == 'K' ? 1 : op == 'M' ? 2 : 4;
        if (!need(n)) return make_error("truncated pickle");
        if (have_text)
          if (Status st = add_address(out, last_text, le(p, i, n)); !st) return st.error();
        i += n;
        break;
      }
      case '.':
        if (out.key.size() != 32) return make_error("no 32-byte key in the worker's address");
        if (out.addresses.empty()) return make_error("no address in the worker's address");
        return out;
      default:
        return make_error("unexpected pickle opcode " + std::to_string(op));
    }
    have_text = false;
  }
  return make_error("truncated pickle");
}

std::string hosts_updated_pickle(uint32_t timestamp, int update) {
  // cloudpickle.dumps(HostsUpdatedRequest(0x7A7B7C7D, HostUpdateResult(update)), protocol=5);
  // the timestamp is the 4 bytes after 'J'.
  static const std::array<std::string_view, 3> kTemplates = {
      "80059594000000000000008c1d686f726f766f642e72756e6e65722e656c61737469632e776f726b6572948c"
      "13486f73747355706461746564526571756573749493942981947d94288c0974696d657374616d70944a7d7c"
      "7b7a8c03726573948c086275696c74696e73948c076765746174747294939468008c10486f73745570646174"
      "65526573756c749493948c0772656d6f766564948694529475622e",
      "80059592000000000000008c1d686f726f766f642e72756e6e65722e656c61737469632e776f726b6572948c"
      "13486f73747355706461746564526571756573749493942981947d94288c0974696d657374616d70944a7d7c"
      "7b7a8c03726573948c086275696c74696e73948c076765746174747294939468008c10486f73745570646174"
      "65526573756c749493948c056164646564948694529475622e",
      "800595bc000000000000008c1d686f726f766f642e72756e6e65722e656c61737469632e776f726b6572948c"
      "13486f73747355706461746564526571756573749493942981947d94288c0974696d657374616d70944a7d7c"
      "7b7a8c03726573948c095f6f70657261746f72948c036f725f9493948c086275696c74696e73948c07676574"
      "6174747294939468008c10486f7374557064617465526573756c749493948c0561646465649486945294680c"
      "680e8c0772656d6f76656494869452948694529475622e",
  };
  const std::string_view hex = kTemplates[(update >= 1 && update <= 3 ? update : 2) - 1];
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  const size_t at = out.find("J}|{z");
  for (int b = 0; b < 4; ++b) out[at + 1 + b] = static_cast<char>((timestamp >> (8 * b)) & 0xff);
  return out;
}

std::string service_message(std::string_view digest, std::string_view body) {
  std::string out(digest);
  const auto n = static_cast<uint32_t>(body.size());
  for (int b = 0; b < 4; ++b) out.push_back(static_cast<char>((n >> (8 * b)) & 0xff));
  out.append(body);
  return out;
}

}  // namespace ferry
