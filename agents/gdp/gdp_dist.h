#pragma once
// Distributed GDP pretraining (docs/distributed.md): who this process is among the
// ranks of a job, and a small thread pool for rollouts. Torch-free on purpose (the CLI
// includes it); the process group itself (c10d, LibTorch) is in agents/gdp/gdp_dist_group.h.
//
// Rank discovery, first match wins:
//   1. GdpDistConfig::url / rank / world_size (train-policy --dist-url --rank --world-size);
//   2. the torchrun environment: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT;
//   3. MPI launchers: OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK (the rendezvous is still the
//      c10d TCP store at MASTER_ADDR:MASTER_PORT, defaults 127.0.0.1:29500);
//   4. none of these: a single process (rank 0 of 1).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agents/gdp/gdp.h"
#include "src/util/error.h"

namespace placer {

/// Where this process stands in a distributed run.
struct DistSetup {
  std::string init;     ///< "tcp://host:port" or "file:///path" ("" when world_size == 1)
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string source;   ///< "flags", "env", "mpi" or "single"
};

namespace dist_detail {
inline const char* getenv_nonempty(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}
inline int parse_int(const std::string& what, const std::string& text) {
  size_t used = 0;
  int v = 0;
  try {
    v = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) {
    throw ValidationError(what + ": expected an integer, got '" + text + "'");
  }
  return v;
}
inline void check_rank(const std::string& who, int rank, int world) {
  if (world < 1) throw ValidationError(who + ": world size must be >= 1 (got " + std::to_string(world) + ")");
  if (rank < 0 || rank >= world) {
    throw ValidationError(who + ": rank " + std::to_string(rank) + " is outside [0, " +
                          std::to_string(world) + ")");
  }
}
}  // namespace dist_detail

/// Resolves the rank, world size and rendezvous of this process from `c` (flags) or the
/// environment (see the top of this file). ValidationError on incomplete or bad settings
/// (e.g. --rank without --world-size, a url that is neither tcp:// nor file://).
inline DistSetup resolve_dist(const GdpDistConfig& c) {
  using namespace dist_detail;
  DistSetup s;
  const bool flags = !c.url.empty() || c.rank >= 0 || c.world_size >= 0;
  if (flags) {
    if (c.world_size < 0) throw ValidationError("--world-size: required with --dist-url / --rank");
    if (c.world_size > 1 && c.rank < 0) throw ValidationError("--rank: required with --world-size > 1");
    s.world_size = c.world_size;
    s.rank = c.rank < 0 ? 0 : c.rank;
    check_rank("--rank", s.rank, s.world_size);
    if (s.world_size > 1 && c.url.empty()) {
      throw ValidationError("--dist-url: required with --world-size > 1 (tcp://host:port)");
    }
    s.init = c.url;
    s.local_rank = c.local_rank >= 0 ? c.local_rank : s.rank;
    s.source = "flags";
  } else if (getenv_nonempty("WORLD_SIZE") != nullptr || getenv_nonempty("RANK") != nullptr) {
    const char* w = getenv_nonempty("WORLD_SIZE");
    const char* r = getenv_nonempty("RANK");
    if (w == nullptr || r == nullptr) {
      throw ValidationError("environment: RANK and WORLD_SIZE must be set together");
    }
    s.world_size = parse_int("WORLD_SIZE", w);
    s.rank = parse_int("RANK", r);
    check_rank("RANK", s.rank, s.world_size);
    const char* lr = getenv_nonempty("LOCAL_RANK");
    s.local_rank = lr != nullptr ? parse_int("LOCAL_RANK", lr) : s.rank;
    const char* addr = getenv_nonempty("MASTER_ADDR");
    const char* port = getenv_nonempty("MASTER_PORT");
    if (s.world_size > 1 && (addr == nullptr || port == nullptr)) {
      throw ValidationError(
          "environment: MASTER_ADDR and MASTER_PORT are required with WORLD_SIZE > 1");
    }
    if (s.world_size > 1) s.init = std::string("tcp://") + addr + ":" + port;
    s.source = "env";
  } else if (getenv_nonempty("OMPI_COMM_WORLD_SIZE") != nullptr) {
    s.world_size = parse_int("OMPI_COMM_WORLD_SIZE", getenv_nonempty("OMPI_COMM_WORLD_SIZE"));
    const char* r = getenv_nonempty("OMPI_COMM_WORLD_RANK");
    if (r == nullptr) throw ValidationError("environment: OMPI_COMM_WORLD_RANK is not set");
    s.rank = parse_int("OMPI_COMM_WORLD_RANK", r);
    check_rank("OMPI_COMM_WORLD_RANK", s.rank, s.world_size);
    const char* lr = getenv_nonempty("OMPI_COMM_WORLD_LOCAL_RANK");
    s.local_rank = lr != nullptr ? parse_int("OMPI_COMM_WORLD_LOCAL_RANK", lr) : s.rank;
    const char* addr = getenv_nonempty("MASTER_ADDR");
    const char* port = getenv_nonempty("MASTER_PORT");
    if (s.world_size > 1) {
      s.init = std::string("tcp://") + (addr ? addr : "127.0.0.1") + ":" + (port ? port : "29500");
    }
    s.source = "mpi";
  } else {
    s.source = "single";
  }
  if (!s.init.empty() && s.init.rfind("tcp://", 0) != 0 && s.init.rfind("file://", 0) != 0) {
    throw ValidationError("--dist-url: '" + s.init + "' is not tcp://host:port or file:///path");
  }
  if (s.world_size == 1) s.init.clear();
  return s;
}

/// Threads for rollouts: `requested` when > 0, else the machine's cores (at least 1).
inline int resolve_threads(int requested) {
  if (requested > 0) return requested;
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

/// Runs fn(0) .. fn(n-1) on up to `threads` threads (the caller's included). Each index runs
/// exactly once; results must go to per-index slots, so the outcome does not depend on the
/// thread count. The first exception thrown (lowest index) is rethrown after all finished.
inline void parallel_for(size_t n, int threads, const std::function<void(size_t)>& fn) {
  const size_t t = std::min(n, static_cast<size_t>(threads < 1 ? 1 : threads));
  if (t <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::exception_ptr> errors(n);
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) {
      try {
        fn(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (size_t k = 1; k < t; ++k) pool.emplace_back(work);
  work();
  for (std::thread& th : pool) th.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace placer
