#pragma once
// The small readers of op attributes and op types that the sharding rules and the variable
// reconstruction share (env/sharding_rules.cpp, env/sharding_variables.cpp).

#include <cstdint>
#include <string>
#include <vector>

#include "src/graph/graph.h"

namespace placer {
namespace shard {

using Shape = std::vector<int64_t>;

/// The value of attribute `key` of `o`; null when absent.
const std::string* find_attr(const Op& o, const char* key);
/// A whole decimal number; false when `s` is not one.
bool whole_number(const std::string& s, int64_t* out);
/// Attribute `key` as an integer; `fallback` when absent or malformed.
int64_t attr_int(const Op& o, const char* key, int64_t fallback);
/// "1,0,2" (also "[1, 0, 2]"); false when absent or malformed.
bool attr_ints(const Op& o, const char* key, std::vector<int64_t>* out);
/// Axis in [0, rank) or -1.
int norm_axis(int64_t a, size_t rank);
/// Number of elements of a shape.
int64_t prod(const Shape& s);
/// Op types that act element by element / reduce over axes.
bool is_elementwise_type(const std::string& t);
bool is_reduce_type(const std::string& t);

}  // namespace shard
}  // namespace placer
