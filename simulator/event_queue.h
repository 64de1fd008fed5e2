#pragma once
// The simulator's event queue: events ordered by time, ties by insertion order (so a run is
// deterministic). A 4-ary heap of 16-byte (time, sequence) keys; payloads live in a side
// array indexed by the sequence number, appended in order. clear() keeps the capacity, so
// a queue reused across runs does not allocate once it has grown.

#include <cstdint>
#include <vector>

namespace placer {

class EventQueue {
 public:
  struct Event {
    double time = 0;
    uint32_t a = 0, b = 0;
    uint8_t kind = 0;
  };

  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  /// Time of the earliest event; the queue must not be empty.
  double top_time() const { return heap_.front().time; }
  /// Events pushed since the last clear().
  uint32_t pushed() const { return static_cast<uint32_t>(payload_.size()); }

  void clear() {
    heap_.clear();
    payload_.clear();
  }

  void push(double time, uint8_t kind, uint32_t a, uint32_t b) {
    const uint32_t seq = static_cast<uint32_t>(payload_.size());
    payload_.push_back(Payload{a, b, kind});
    heap_.push_back(Key{time, seq});
    size_t i = heap_.size() - 1;
    const Key k = heap_[i];
    while (i > 0) {
      const size_t parent = (i - 1) / kArity;
      if (!less(k, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = k;
  }

  /// Removes and returns the earliest event.
  Event pop() {
    const Key top = heap_.front();
    const Key last = heap_.back();
    heap_.pop_back();
    const size_t n = heap_.size();
    if (n > 0) {
      size_t i = 0;
      for (;;) {
        const size_t first = i * kArity + 1;
        if (first >= n) break;
        size_t best = first;
        const size_t end = first + kArity < n ? first + kArity : n;
        for (size_t c = first + 1; c < end; ++c) {
          if (less(heap_[c], heap_[best])) best = c;
        }
        if (!less(heap_[best], last)) break;
        heap_[i] = heap_[best];
        i = best;
      }
      heap_[i] = last;
    }
    const Payload& p = payload_[top.seq];
    return Event{top.time, p.a, p.b, p.kind};
  }

 private:
  static constexpr size_t kArity = 4;
  struct Key {
    double time;
    uint32_t seq;
  };
  struct Payload {
    uint32_t a, b;
    uint8_t kind;
  };
  static bool less(const Key& x, const Key& y) {
    return x.time < y.time || (x.time == y.time && x.seq < y.seq);
  }

  std::vector<Key> heap_;
  std::vector<Payload> payload_;
};

}  // namespace placer
