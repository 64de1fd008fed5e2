#include "agents/common/option_fields.h"

#include <sstream>

namespace placer {

std::vector<std::pair<std::string, std::string>> option_key_docs(const char* block) {
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream lines(block);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string key, doc;
    if (!(words >> key)) continue;
    std::getline(words >> std::ws, doc);
    out.emplace_back(key, doc);
  }
  return out;
}

}  // namespace placer
