// MPI bootstrap (built only when CMake finds MPI: PLACER_CALIBRATE_MPI).
#include "bootstrap.h"

#ifdef PLACER_CALIBRATE_MPI
#include <mpi.h>

#include <cstdlib>
#endif

namespace placer::calibrate {

#ifdef PLACER_CALIBRATE_MPI
namespace {

void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw BootstrapError(std::string("MPI error: ") + call + " failed: " + msg);
}
#define PC_MPI(call) check_mpi((call), #call)

class MpiBootstrap : public Bootstrap {
 public:
  MpiBootstrap(int* argc, char*** argv) {
    PC_MPI(MPI_Init(argc, argv));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    PC_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
    PC_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size_));
    MPI_Comm local;
    PC_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local));
    PC_MPI(MPI_Comm_rank(local, &local_rank_));
    MPI_Comm_free(&local);
  }
  ~MpiBootstrap() override { MPI_Finalize(); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  void broadcast(void* data, std::size_t bytes) override {
    PC_MPI(MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, 0, MPI_COMM_WORLD));
  }
  std::vector<std::string> all_gather(const std::string& value) override {
    int len = static_cast<int>(value.size());
    std::vector<int> lens(size_);
    PC_MPI(MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD));
    std::vector<int> offsets(size_, 0);
    int total = 0;
    for (int r = 0; r < size_; ++r) {
      offsets[r] = total;
      total += lens[r];
    }
    std::string all(static_cast<std::size_t>(total), '\0');
    PC_MPI(MPI_Allgatherv(value.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(),
                          MPI_CHAR, MPI_COMM_WORLD));
    std::vector<std::string> out(size_);
    for (int r = 0; r < size_; ++r) out[r] = all.substr(offsets[r], lens[r]);
    return out;
  }
  void barrier() override { PC_MPI(MPI_Barrier(MPI_COMM_WORLD)); }
  std::string name() const override { return "mpi"; }

 private:
  int rank_ = 0, size_ = 1, local_rank_ = 0;
};

}  // namespace

std::unique_ptr<Bootstrap> make_mpi_bootstrap(int* argc, char*** argv) {
  return std::make_unique<MpiBootstrap>(argc, argv);
}

#else

std::unique_ptr<Bootstrap> make_mpi_bootstrap(int*, char***) {
  throw BootstrapError("placer-calibrate was built without MPI");
}

#endif

}  // namespace placer::calibrate
