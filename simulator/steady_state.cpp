#include "simulator/steady_state.h"

#include <algorithm>

namespace placer {

double steady_state_time(const SimResult& r, const Cluster& c) {
  double busiest = 0;
  const size_t n = std::min(r.compute_time.size(), r.comm_time.size());
  for (size_t d = 0; d < n && static_cast<int>(d) < c.num_devices(); ++d) {
    const double compute = r.compute_time[d], comm = r.comm_time[d];
    const bool overlap = c.device(static_cast<int>(d)).spec.overlap_transfers;
    busiest = std::max(busiest, overlap ? std::max(compute, comm) : compute + comm);
  }
  return busiest;
}

}  // namespace placer
