#pragma once
// The text forms shared by every reader of options and configuration values: one boolean
// vocabulary (command-line `--set`, YAML configuration files, policy sidecars and the other
// YAML readers all take the same spellings) and the edit distance behind the "did you mean"
// suggestions for a mistyped key or name.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace placer {

/// The accepted spellings of a bool, for error messages.
constexpr const char* kBoolSpellings = "true/false, yes/no, on/off or 1/0";

/// Reads a bool: true/false, yes/no, on/off, 1/0, in any case. False when `text` is none of
/// them (`*out` is then left alone).
bool parse_bool_text(const std::string& text, bool* out);

/// Levenshtein distance of a and b, or any value > cap once it is known to exceed cap.
size_t edit_distance(const std::string& a, const std::string& b, size_t cap = SIZE_MAX);

/// The name in `known` closest to `name` when fewer than `max_distance` edits away (a typo),
/// else "".
std::string closest_name(const std::string& name, const std::vector<std::string>& known,
                         size_t max_distance = 3);

}  // namespace placer
