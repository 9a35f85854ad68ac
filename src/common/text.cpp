#include "ferry/common/text.hpp"

#include <algorithm>

namespace ferry {

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  while (true) {
    auto at = text.find(sep);
    out.emplace_back(text.substr(0, at));
    if (at == std::string_view::npos) break;
    text.remove_prefix(at + 1);
  }
  return out;
}

std::string number_ranges(std::vector<int> numbers) {
  std::sort(numbers.begin(), numbers.end());
  std::string out;
  for (size_t i = 0; i < numbers.size();) {
    size_t j = i;
    while (j + 1 < numbers.size() && numbers[j + 1] <= numbers[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(numbers[i]);
    if (numbers[j] != numbers[i]) out += '-' + std::to_string(numbers[j]);
    i = j + 1;
  }
  return out;
}

Result<std::vector<std::string>> shell_words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (char c : text) {
    if (quote) {
      if (c == quote)
        quote = 0;
      else
        word += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (quote) return make_error("unbalanced quote in '" + std::string(text) + "'");
  if (in_word) words.push_back(std::move(word));
  return words;
}

}  // namespace ferry
