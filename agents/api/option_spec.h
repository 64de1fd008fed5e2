#pragma once
// One entry of a method's option schema (MethodInfo::options): what `placer methods`
// lists and what `placer place --set KEY=VALUE` accepts. Built from the method's
// OptionTable (agents/common/option_table.h).

#include <string>

namespace placer {

struct OptionSpec {
  std::string key;            ///< as given to --set ("episodes", "lr")
  std::string type;           ///< "int", "number", "bool", "text", "list", "path", a choice "a|b"
  std::string default_value;  ///< the default as text
  std::string doc;            ///< one line
};

}  // namespace placer
