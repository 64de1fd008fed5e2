// placer-calibrate: how the processes of a multi-host run find each other (host-only).
// One process per GPU, started by mpirun (MPI bootstrap, when built with MPI) or as torchrun
// starts workers (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT: a TCP store where
// rank 0 listens). Either way rank 0 broadcasts the ncclUniqueId and gathers host names.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace placer::calibrate {

class BootstrapError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const = 0;
  // Rank 0's `bytes` bytes at `data` overwrite every other rank's.
  virtual void broadcast(void* data, std::size_t bytes) = 0;
  // Every rank's value, in rank order, on every rank.
  virtual std::vector<std::string> all_gather(const std::string& value) = 0;
  virtual void barrier() { all_gather(std::string()); }
  virtual std::string name() const = 0;
};

struct LaunchEnv {
  enum class Kind { Single, Mpi, Tcp };
  Kind kind = Kind::Single;
  int rank = 0, size = 1, local_rank = 0;
  std::string master_addr;
  int master_port = 0;
  int timeout_s = 300;  // PLACER_CALIBRATE_TIMEOUT
};

// Reads the launcher's environment through `getenv` (std::getenv in the program; a map in
// tests). mpirun (OMPI_COMM_WORLD_SIZE / PMI_SIZE > 1) -> Mpi when `have_mpi`; else
// WORLD_SIZE > 1 -> Tcp (MASTER_ADDR, MASTER_PORT required; RANK required; LOCAL_RANK
// defaults to RANK). Throws BootstrapError naming the variable on bad values.
LaunchEnv detect_launch(const std::function<const char*(const char*)>& getenv, bool have_mpi);

// TCP store. Rank 0 listens on `port` (0 = any free port, see port()); the others connect to
// addr:port, retrying until `timeout_s` has passed. Every receive has the same timeout.
class TcpBootstrap : public Bootstrap {
 public:
  // Rank 0, step 1: bind and listen (so tests can learn a free port before others connect).
  static int listen_on(int port, int* bound_port);
  // Rank 0, step 2: accept size-1 peers on `listen_fd` (taken over and closed).
  TcpBootstrap(int listen_fd, int size, int timeout_s);
  // Rank r > 0: connect to rank 0.
  TcpBootstrap(int rank, int size, int local_rank, const std::string& addr, int port,
               int timeout_s);
  ~TcpBootstrap() override;
  TcpBootstrap(const TcpBootstrap&) = delete;
  TcpBootstrap& operator=(const TcpBootstrap&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  void broadcast(void* data, std::size_t bytes) override;
  std::vector<std::string> all_gather(const std::string& value) override;
  std::string name() const override { return "tcp"; }

 private:
  int rank_ = 0, size_ = 1, local_rank_ = 0, timeout_s_ = 300;
  std::vector<int> peers_;  // rank 0: fd per rank (index 0 unused); others: peers_[0] = root
};

// From the launch environment: rank 0 listens on MASTER_PORT, the others connect.
std::unique_ptr<Bootstrap> make_tcp_bootstrap(const LaunchEnv& env);
// MPI_Init + MPI_COMM_WORLD (only when built with PLACER_CALIBRATE_MPI; else throws).
std::unique_ptr<Bootstrap> make_mpi_bootstrap(int* argc, char*** argv);

}  // namespace placer::calibrate
