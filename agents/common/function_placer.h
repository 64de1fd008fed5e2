#pragma once
// Two bases of the placers that are little more than a name and a search: FunctionPlacer,
// a placer whose search is one function of (problem, budget) (function_method registers
// one), and OptionsPlacer, the base of a placer class that keeps an options struct.

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "agents/api/placer.h"

namespace placer {

/// A placer named `name` whose search is `fn(problem, budget)`.
class FunctionPlacer : public Placer {
 public:
  using Fn = std::function<Plan(const Problem&, const SearchBudget&)>;
  FunctionPlacer(std::string name, Fn fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  std::string name() const override { return name_; }
  Plan search(const Problem& problem, const SearchBudget& budget) override {
    return fn_(problem, budget);
  }

 private:
  std::string name_;
  Fn fn_;
};

/// The registration of a fast method without options whose placer is FunctionPlacer(name, fn).
inline MethodInfo function_method(const std::string& name, const std::string& description,
                                  FunctionPlacer::Fn fn) {
  MethodInfo m;
  m.name = name;
  m.description = description;
  m.fast = true;
  m.make = [name, fn]() { return std::unique_ptr<Placer>(new FunctionPlacer(name, fn)); };
  return m;
}

/// The base of a placer named `name` that searches with its `options_`.
template <class Options>
class OptionsPlacer : public Placer {
 public:
  OptionsPlacer(std::string name, Options options)
      : options_(std::move(options)), name_(std::move(name)) {}
  std::string name() const override { return name_; }

 protected:
  Options options_;

 private:
  std::string name_;
};

}  // namespace placer
