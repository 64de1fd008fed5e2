// TCP store bootstrap: plain POSIX sockets, every wait bounded by a timeout.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>

#include "bootstrap.h"

namespace placer::calibrate {
namespace {

constexpr std::uint32_t kMagic = 0x5043414c;  // "PCAL"
constexpr std::uint32_t kVersion = 1;
using Clock = std::chrono::steady_clock;

std::string sys_error(const std::string& what) {
  return "TCP bootstrap: " + what + ": " + std::strerror(errno);
}

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

void wait_fd(int fd, short events, Clock::time_point deadline, const std::string& what,
             int timeout_s) {
  while (true) {
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, remaining_ms(deadline));
    if (r > 0) return;
    if (r == 0)
      throw BootstrapError("TCP bootstrap: timed out after " + std::to_string(timeout_s) +
                           " s " + what + " (PLACER_CALIBRATE_TIMEOUT sets the limit)");
    if (errno != EINTR) throw BootstrapError(sys_error("poll " + what));
  }
}

void send_all(int fd, const void* data, std::size_t n, int timeout_s, const std::string& peer) {
  const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    wait_fd(fd, POLLOUT, deadline, "sending to " + peer, timeout_s);
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw BootstrapError(sys_error("sending to " + peer));
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void recv_all(int fd, void* data, std::size_t n, int timeout_s, const std::string& peer) {
  const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
  char* p = static_cast<char*>(data);
  while (n > 0) {
    wait_fd(fd, POLLIN, deadline, "waiting for " + peer, timeout_s);
    const ssize_t r = ::recv(fd, p, n, 0);
    if (r == 0) throw BootstrapError("TCP bootstrap: " + peer + " closed the connection");
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw BootstrapError(sys_error("receiving from " + peer));
    }
    p += r;
    n -= static_cast<std::size_t>(r);
  }
}

void send_u64(int fd, std::uint64_t v, int t, const std::string& peer) { send_all(fd, &v, 8, t, peer); }
std::uint64_t recv_u64(int fd, int t, const std::string& peer) {
  std::uint64_t v = 0;
  recv_all(fd, &v, 8, t, peer);
  return v;
}
void send_str(int fd, const std::string& s, int t, const std::string& peer) {
  send_u64(fd, s.size(), t, peer);
  if (!s.empty()) send_all(fd, s.data(), s.size(), t, peer);
}
std::string recv_str(int fd, int t, const std::string& peer) {
  const std::uint64_t n = recv_u64(fd, t, peer);
  if (n > (std::uint64_t{1} << 30))
    throw BootstrapError("TCP bootstrap: " + peer + " sent a malformed message (length " +
                         std::to_string(n) + ")");
  std::string s(n, '\0');
  if (n) recv_all(fd, s.data(), n, t, peer);
  return s;
}

std::string rank_name(int r) { return "rank " + std::to_string(r); }

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

}  // namespace

int TcpBootstrap::listen_on(int port, int* bound_port) {
  if (port < 0 || port > 65535) throw BootstrapError("TCP bootstrap: bad port " + std::to_string(port));
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw BootstrapError(sys_error("socket"));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const std::string msg = sys_error("rank 0 cannot listen on port " + std::to_string(port) +
                                      " (MASTER_PORT)");
    ::close(fd);
    throw BootstrapError(msg);
  }
  if (::listen(fd, 128) != 0) {
    const std::string msg = sys_error("listen");
    ::close(fd);
    throw BootstrapError(msg);
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  if (bound_port) *bound_port = ntohs(addr.sin_port);
  return fd;
}

TcpBootstrap::TcpBootstrap(int listen_fd, int size, int timeout_s)
    : rank_(0), size_(size), local_rank_(0), timeout_s_(timeout_s), peers_(size, -1) {
  const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
  try {
    for (int accepted = 1; accepted < size; ++accepted) {
      wait_fd(listen_fd, POLLIN, deadline,
              "waiting for ranks to connect (" + std::to_string(accepted - 1) + " of " +
                  std::to_string(size - 1) + " joined)",
              timeout_s);
      const int fd = ::accept(listen_fd, nullptr, nullptr);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) {
          --accepted;
          continue;
        }
        throw BootstrapError(sys_error("accept"));
      }
      set_nodelay(fd);
      std::uint32_t hello[4] = {0, 0, 0, 0};
      try {
        recv_all(fd, hello, sizeof hello, timeout_s, "a connecting rank");
      } catch (...) {
        ::close(fd);
        throw;
      }
      const int r = static_cast<int>(hello[2]);
      std::string problem;
      if (hello[0] != kMagic || hello[1] != kVersion) problem = "is not placer-calibrate " + std::to_string(kVersion);
      else if (static_cast<int>(hello[3]) != size)
        problem = "has WORLD_SIZE " + std::to_string(hello[3]) + ", rank 0 has " + std::to_string(size);
      else if (r <= 0 || r >= size) problem = "claims rank " + std::to_string(r);
      else if (peers_[r] >= 0) problem = "claims rank " + std::to_string(r) + " twice";
      if (!problem.empty()) {
        ::close(fd);
        throw BootstrapError("TCP bootstrap: a connecting process " + problem +
                             " (check RANK and WORLD_SIZE of every process)");
      }
      peers_[r] = fd;
      const std::uint32_t ack[2] = {kMagic, kVersion};
      send_all(fd, ack, sizeof ack, timeout_s, rank_name(r));
    }
  } catch (...) {
    ::close(listen_fd);
    for (int fd : peers_)
      if (fd >= 0) ::close(fd);
    throw;
  }
  ::close(listen_fd);
}

TcpBootstrap::TcpBootstrap(int rank, int size, int local_rank, const std::string& addr, int port,
                           int timeout_s)
    : rank_(rank), size_(size), local_rank_(local_rank), timeout_s_(timeout_s) {
  if (rank <= 0 || rank >= size)
    throw BootstrapError("TCP bootstrap: rank " + std::to_string(rank) + " outside [1, " +
                         std::to_string(size) + ")");
  const std::string where = addr + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
  std::string last_error = "no attempt";
  int fd = -1;
  while (fd < 0) {
    addrinfo* res = nullptr;
    const int gai = ::getaddrinfo(addr.c_str(), std::to_string(port).c_str(), &hints, &res);
    if (gai != 0) {
      last_error = std::string("cannot resolve MASTER_ADDR: ") + gai_strerror(gai);
    } else {
      for (addrinfo* ai = res; ai && fd < 0; ai = ai->ai_next) {
        const int s = ::socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (s < 0) continue;
        if (::connect(s, ai->ai_addr, ai->ai_addrlen) == 0) {
          fd = s;
        } else {
          last_error = std::strerror(errno);
          ::close(s);
        }
      }
      ::freeaddrinfo(res);
    }
    if (fd >= 0) break;
    if (Clock::now() >= deadline) {
      throw BootstrapError("TCP bootstrap: rank " + std::to_string(rank) +
                           " could not connect to rank 0 at " + where + " (MASTER_ADDR:MASTER_PORT) within " +
                           std::to_string(timeout_s) + " s: " + last_error);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  set_nodelay(fd);
  peers_.assign(1, fd);
  const std::uint32_t hello[4] = {kMagic, kVersion, static_cast<std::uint32_t>(rank),
                                  static_cast<std::uint32_t>(size)};
  send_all(fd, hello, sizeof hello, timeout_s, "rank 0 at " + where);
  std::uint32_t ack[2] = {0, 0};
  recv_all(fd, ack, sizeof ack, timeout_s, "rank 0 at " + where);
  if (ack[0] != kMagic || ack[1] != kVersion)
    throw BootstrapError("TCP bootstrap: " + where + " is not a placer-calibrate rank 0");
}

TcpBootstrap::~TcpBootstrap() {
  for (int fd : peers_)
    if (fd >= 0) ::close(fd);
}

void TcpBootstrap::broadcast(void* data, std::size_t bytes) {
  if (rank_ == 0) {
    for (int r = 1; r < size_; ++r) {
      send_u64(peers_[r], bytes, timeout_s_, rank_name(r));
      send_all(peers_[r], data, bytes, timeout_s_, rank_name(r));
    }
    return;
  }
  const std::uint64_t n = recv_u64(peers_[0], timeout_s_, "rank 0");
  if (n != bytes)
    throw BootstrapError("TCP bootstrap: rank 0 broadcast " + std::to_string(n) + " bytes, rank " +
                         std::to_string(rank_) + " expected " + std::to_string(bytes));
  recv_all(peers_[0], data, bytes, timeout_s_, "rank 0");
}

std::vector<std::string> TcpBootstrap::all_gather(const std::string& value) {
  std::vector<std::string> all(size_);
  if (rank_ == 0) {
    all[0] = value;
    for (int r = 1; r < size_; ++r) all[r] = recv_str(peers_[r], timeout_s_, rank_name(r));
    for (int r = 1; r < size_; ++r) {
      send_u64(peers_[r], all.size(), timeout_s_, rank_name(r));
      for (const auto& s : all) send_str(peers_[r], s, timeout_s_, rank_name(r));
    }
    return all;
  }
  send_str(peers_[0], value, timeout_s_, "rank 0");
  const std::uint64_t n = recv_u64(peers_[0], timeout_s_, "rank 0");
  if (n != static_cast<std::uint64_t>(size_))
    throw BootstrapError("TCP bootstrap: rank 0 sent " + std::to_string(n) + " values for " +
                         std::to_string(size_) + " ranks");
  for (auto& s : all) s = recv_str(peers_[0], timeout_s_, "rank 0");
  return all;
}

}  // namespace placer::calibrate
