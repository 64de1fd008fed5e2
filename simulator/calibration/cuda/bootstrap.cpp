#include "bootstrap.h"

#include <string>

namespace placer::calibrate {
namespace {

bool parse_env_int(const std::function<const char*(const char*)>& getenv, const char* name,
                   int lo, int hi, int* out) {
  const char* v = getenv(name);
  if (!v) return false;
  const std::string s = v;
  std::size_t pos = 0;
  long long x = 0;
  try {
    x = std::stoll(s, &pos, 10);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (s.empty() || pos != s.size())
    throw BootstrapError(std::string("environment: ") + name + "='" + s + "' is not an integer");
  if (x < lo || x > hi) {
    throw BootstrapError(std::string("environment: ") + name + "=" + s + " is out of range [" +
                         std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  *out = static_cast<int>(x);
  return true;
}

}  // namespace

LaunchEnv detect_launch(const std::function<const char*(const char*)>& getenv, bool have_mpi) {
  LaunchEnv env;
  int t = 0;
  if (parse_env_int(getenv, "PLACER_CALIBRATE_TIMEOUT", 1, 86400, &t)) env.timeout_s = t;
  constexpr int kMaxRanks = 1 << 20;

  int mpi_size = 0;
  const bool under_mpi = parse_env_int(getenv, "OMPI_COMM_WORLD_SIZE", 1, kMaxRanks, &mpi_size) ||
                         parse_env_int(getenv, "PMI_SIZE", 1, kMaxRanks, &mpi_size);
  int world = 0;
  const bool torchrun = parse_env_int(getenv, "WORLD_SIZE", 1, kMaxRanks, &world);

  if (under_mpi && mpi_size > 1 && have_mpi) {
    env.kind = LaunchEnv::Kind::Mpi;
    env.size = mpi_size;
    if (!parse_env_int(getenv, "OMPI_COMM_WORLD_RANK", 0, mpi_size - 1, &env.rank))
      parse_env_int(getenv, "PMI_RANK", 0, mpi_size - 1, &env.rank);
    if (!parse_env_int(getenv, "OMPI_COMM_WORLD_LOCAL_RANK", 0, kMaxRanks, &env.local_rank) &&
        !parse_env_int(getenv, "MPI_LOCALRANKID", 0, kMaxRanks, &env.local_rank))
      env.local_rank = -1;  // ask MPI (shared-memory split) after MPI_Init
    return env;
  }
  if (!torchrun || world == 1) {
    if (under_mpi && mpi_size > 1) {
      throw BootstrapError(
          "started by mpirun with " + std::to_string(mpi_size) +
          " processes, but placer-calibrate was built without MPI: rebuild it with MPI "
          "(mpicxx found at configure time) or set RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR "
          "and MASTER_PORT for the TCP bootstrap");
    }
    return env;  // single process: every local GPU through ncclCommInitAll
  }
  env.kind = LaunchEnv::Kind::Tcp;
  env.size = world;
  if (!parse_env_int(getenv, "RANK", 0, world - 1, &env.rank))
    throw BootstrapError("environment: WORLD_SIZE=" + std::to_string(world) +
                         " is set but RANK is not (set RANK, LOCAL_RANK, MASTER_ADDR, MASTER_PORT)");
  if (!parse_env_int(getenv, "LOCAL_RANK", 0, kMaxRanks, &env.local_rank)) env.local_rank = env.rank;
  const char* addr = getenv("MASTER_ADDR");
  if (!addr || !*addr)
    throw BootstrapError("environment: WORLD_SIZE=" + std::to_string(world) +
                         " is set but MASTER_ADDR is not (the host where rank 0 runs)");
  env.master_addr = addr;
  if (!parse_env_int(getenv, "MASTER_PORT", 1, 65535, &env.master_port))
    throw BootstrapError("environment: WORLD_SIZE=" + std::to_string(world) +
                         " is set but MASTER_PORT is not (a free TCP port on MASTER_ADDR)");
  return env;
}

std::unique_ptr<Bootstrap> make_tcp_bootstrap(const LaunchEnv& env) {
  if (env.rank == 0) {
    int port = 0;
    const int fd = TcpBootstrap::listen_on(env.master_port, &port);
    return std::make_unique<TcpBootstrap>(fd, env.size, env.timeout_s);
  }
  return std::make_unique<TcpBootstrap>(env.rank, env.size, env.local_rank, env.master_addr,
                                        env.master_port, env.timeout_s);
}

}  // namespace placer::calibrate
