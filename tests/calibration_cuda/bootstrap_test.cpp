// placer-calibrate's bootstrap: launcher environment detection and the TCP store, with
// threads standing in for the processes of a multi-host run.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <thread>

#include "bootstrap.h"

namespace placer::calibrate {
namespace {

LaunchEnv detect(const std::map<std::string, std::string>& vars, bool have_mpi = false) {
  return detect_launch(
      [&](const char* name) -> const char* {
        const auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
      },
      have_mpi);
}

TEST(CalibrateBootstrap, DetectsTheLauncher) {
  EXPECT_EQ(detect({}).kind, LaunchEnv::Kind::Single);
  EXPECT_EQ(detect({{"WORLD_SIZE", "1"}, {"RANK", "0"}}).kind, LaunchEnv::Kind::Single);
  const LaunchEnv t = detect({{"WORLD_SIZE", "16"}, {"RANK", "9"}, {"LOCAL_RANK", "1"},
                              {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "29500"},
                              {"PLACER_CALIBRATE_TIMEOUT", "60"}});
  EXPECT_EQ(t.kind, LaunchEnv::Kind::Tcp);
  EXPECT_EQ(t.rank, 9);
  EXPECT_EQ(t.size, 16);
  EXPECT_EQ(t.local_rank, 1);
  EXPECT_EQ(t.master_addr, "node0");
  EXPECT_EQ(t.master_port, 29500);
  EXPECT_EQ(t.timeout_s, 60);
  const LaunchEnv m = detect({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "3"},
                              {"OMPI_COMM_WORLD_LOCAL_RANK", "3"}},
                             true);
  EXPECT_EQ(m.kind, LaunchEnv::Kind::Mpi);
  EXPECT_EQ(m.rank, 3);
  EXPECT_EQ(m.size, 4);
  EXPECT_EQ(m.local_rank, 3);
}

void expect_error(const std::map<std::string, std::string>& vars, const std::string& needle,
                  bool have_mpi = false) {
  try {
    detect(vars, have_mpi);
    FAIL() << "no error; expected '" << needle << "'";
  } catch (const BootstrapError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(CalibrateBootstrap, BadEnvironmentNamesTheVariable) {
  expect_error({{"WORLD_SIZE", "two"}}, "WORLD_SIZE='two' is not an integer");
  expect_error({{"WORLD_SIZE", "2"}}, "RANK is not");
  expect_error({{"WORLD_SIZE", "2"}, {"RANK", "2"}}, "RANK=2 is out of range [0, 1]");
  expect_error({{"WORLD_SIZE", "2"}, {"RANK", "1"}, {"MASTER_PORT", "1"}}, "MASTER_ADDR is not");
  expect_error({{"WORLD_SIZE", "2"}, {"RANK", "1"}, {"MASTER_ADDR", "h"}}, "MASTER_PORT is not");
  expect_error({{"WORLD_SIZE", "2"}, {"RANK", "1"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}},
               "MASTER_PORT=70000 is out of range");
  expect_error({{"OMPI_COMM_WORLD_SIZE", "4"}}, "built without MPI");
}

TEST(CalibrateBootstrap, TcpStoreBroadcastsAndGathers) {
  constexpr int kSize = 4;
  int port = 0;
  const int fd = TcpBootstrap::listen_on(0, &port);
  ASSERT_GT(port, 0);
  std::vector<std::string> errors(kSize);
  std::vector<std::vector<std::string>> gathered(kSize);
  std::vector<std::string> ids(kSize);
  auto body = [&](Bootstrap& b) {
    char id[128] = {0};
    if (b.rank() == 0) std::strcpy(id, "unique-id-from-rank-0");
    b.broadcast(id, sizeof id);
    ids[b.rank()] = id;
    gathered[b.rank()] = b.all_gather("host" + std::to_string(b.rank() % 2));
    b.barrier();
  };
  std::vector<std::thread> threads;
  for (int r = 1; r < kSize; ++r) {
    threads.emplace_back([&, r] {
      try {
        TcpBootstrap b(r, kSize, r, "127.0.0.1", port, 20);
        EXPECT_EQ(b.local_rank(), r);
        body(b);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  try {
    TcpBootstrap root(fd, kSize, 20);
    body(root);
  } catch (const std::exception& e) {
    errors[0] = e.what();
  }
  for (auto& t : threads) t.join();
  const std::vector<std::string> hosts = {"host0", "host1", "host0", "host1"};
  for (int r = 0; r < kSize; ++r) {
    EXPECT_EQ(errors[r], "") << "rank " << r;
    EXPECT_EQ(ids[r], "unique-id-from-rank-0") << "rank " << r;
    EXPECT_EQ(gathered[r], hosts) << "rank " << r;
  }
}

TEST(CalibrateBootstrap, TcpStoreTimesOutWithAClearError) {
  int port = 0;
  const int fd = TcpBootstrap::listen_on(0, &port);
  try {
    TcpBootstrap root(fd, 2, 1);  // nobody joins within 1 s
    FAIL() << "no timeout";
  } catch (const BootstrapError& e) {
    EXPECT_NE(std::string(e.what()).find("timed out after 1 s waiting for ranks to connect (0 of 1 joined)"),
              std::string::npos)
        << e.what();
  }
  // A rank whose rank 0 never listens: the port is closed now, so connecting fails until the
  // deadline and the error names the address.
  try {
    TcpBootstrap peer(1, 2, 1, "127.0.0.1", port, 1);
    FAIL() << "connected to nothing";
  } catch (const BootstrapError& e) {
    EXPECT_NE(std::string(e.what()).find("could not connect to rank 0 at 127.0.0.1:" + std::to_string(port)),
              std::string::npos)
        << e.what();
  }
}

TEST(CalibrateBootstrap, TcpStoreRejectsAMismatchedWorldSize) {
  int port = 0;
  const int fd = TcpBootstrap::listen_on(0, &port);
  std::string peer_error;
  std::thread peer([&] {
    try {
      TcpBootstrap b(1, 3, 0, "127.0.0.1", port, 5);
    } catch (const std::exception& e) {
      peer_error = e.what();
    }
  });
  try {
    TcpBootstrap root(fd, 2, 5);
    FAIL() << "accepted a rank with another WORLD_SIZE";
  } catch (const BootstrapError& e) {
    EXPECT_NE(std::string(e.what()).find("has WORLD_SIZE 3, rank 0 has 2"), std::string::npos) << e.what();
  }
  peer.join();
  EXPECT_NE(peer_error, "");  // its connection was closed by rank 0
}

}  // namespace
}  // namespace placer::calibrate
