// RaiseOpenFileLimit (see open_file_limit.h).
#include "fs/daemon/open_file_limit.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>

namespace clairfs {

OpenFileLimit RaiseOpenFileLimit() {
  OpenFileLimit result;
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) {
    result.error = std::string("getrlimit: ") + strerror(errno);
    return result;
  }
  result.before = result.after = lim.rlim_cur;
  if (lim.rlim_cur >= lim.rlim_max) return result;
  lim.rlim_cur = lim.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &lim) != 0) {
    result.error = std::string("setrlimit: ") + strerror(errno);
    return result;
  }
  result.after = lim.rlim_cur;
  return result;
}

}  // namespace clairfs
