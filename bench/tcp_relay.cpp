// The floor of any proxy on this machine: a byte relay that understands nothing. One thread,
// epoll, edge-triggered; each accepted client connection gets its own upstream connection (a byte
// relay cannot pool: it does not know where a request ends) and bytes are copied as they arrive.
// No HTTP parsing, no timers, no ledger. What it adds to TTFT is what one extra process hop costs
// here; proxy_overhead prints it beside the real proxies.
//
//   tcp_relay UPSTREAM_PORT        prints "listening on PORT" and relays until killed
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

namespace {

int listen_any_port(std::uint16_t* port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 4096) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    std::perror("tcp_relay: listen");
    std::exit(1);
  }
  *port = ntohs(a.sin_port);
  return fd;
}

int connect_upstream(std::uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS) {
    close(fd);
    return -1;
  }
  return fd;
}

void no_delay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// Copies what is readable from `from` to `to`. Returns false when the pair should close. A full
// socket buffer on `to` is waited out with poll(2) (a benchmark relay: simpler than queueing, and
// no CPU spent spinning).
bool pump(int from, int to) {
  char buf[16 * 1024];
  for (;;) {
    const ssize_t n = read(from, buf, sizeof buf);
    if (n == 0) return false;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    for (ssize_t off = 0; off < n;) {
      const ssize_t w = write(to, buf + off, static_cast<std::size_t>(n - off));
      if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        pollfd p{to, POLLOUT, 0};
        if (poll(&p, 1, 10'000) <= 0) return false;
        continue;
      }
      if (w <= 0) return false;
      off += w;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: tcp_relay UPSTREAM_PORT\n");
    return 2;
  }
  const auto upstream_port = static_cast<std::uint16_t>(std::atoi(argv[1]));
  std::uint16_t port = 0;
  const int lfd = listen_any_port(&port);
  const int ep = epoll_create1(0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = lfd;
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
  std::printf("listening on %u\n", port);
  std::fflush(stdout);

  std::unordered_map<int, int> peer;
  epoll_event events[256];
  for (;;) {
    const int n = epoll_wait(ep, events, 256, -1);
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == lfd) {
        for (;;) {
          const int c = accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK);
          if (c < 0) break;
          const int u = connect_upstream(upstream_port);
          if (u < 0) {
            close(c);
            continue;
          }
          no_delay(c);
          no_delay(u);
          peer[c] = u;
          peer[u] = c;
          for (int s : {c, u}) {
            epoll_event e{};
            e.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
            e.data.fd = s;
            epoll_ctl(ep, EPOLL_CTL_ADD, s, &e);
          }
        }
        continue;
      }
      auto it = peer.find(fd);
      if (it == peer.end()) continue;
      const int other = it->second;
      if (!pump(fd, other) || (events[i].events & (EPOLLHUP | EPOLLERR))) {
        peer.erase(fd);
        peer.erase(other);
        close(fd);
        close(other);
      }
    }
  }
}
