#include "driver_info.h"

#include <sstream>

namespace placer::calibrate {

namespace {
bool is_version(const std::string& w) {
  bool dot = false, digit = false;
  for (char c : w) {
    if (c == '.') {
      dot = true;
    } else if (c >= '0' && c <= '9') {
      digit = true;
    } else {
      return false;
    }
  }
  return dot && digit;
}
}  // namespace

std::string nvrm_driver_version(const std::string& line) {
  std::istringstream words(line);
  std::string w;
  bool after_module = false;
  while (words >> w) {
    if (w == "Module") {
      after_module = true;
    } else if (after_module && is_version(w)) {
      return w;
    }
  }
  return "";
}

}  // namespace placer::calibrate
