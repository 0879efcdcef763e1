// ProbeMount: mount, INIT, transport start and teardown (see probe_mount.h).
#include "tools/bench/probes/probe_mount.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace clairfs::probe {

Result<std::unique_ptr<ProbeMount>> ProbeMount::Start(ProbeFs* fs,
                                                      const ProbeMountOptions& options) {
  auto mount = std::unique_ptr<ProbeMount>(new ProbeMount(fs, options));
  mount->fd_ = open("/dev/fuse", O_RDWR | O_CLOEXEC);
  if (mount->fd_ < 0) return Status::FromErrno(errno, "open /dev/fuse");
  fs->set_fuse_fd(mount->fd_);
  char data[256];
  std::snprintf(data, sizeof(data),
                "fd=%d,rootmode=40000,user_id=0,group_id=0,default_permissions,allow_other",
                mount->fd_);
  if (::mount("fuse_uring_probe", options.mountpoint.c_str(), "fuse.fuse_uring_probe",
              MS_NOSUID | MS_NODEV | MS_RDONLY, data) != 0) {
    return Status::FromErrno(errno, "mount " + options.mountpoint);
  }
  mount->mounted_ = true;
  InitRequest init;
  init.want_uring = options.uring;
  init.want_passthrough = fs->mode() == ServeMode::kPassthrough;
  init.max_write = options.max_write;
  auto result = ServeInit(mount->fd_, init);
  if (!result.ok()) return result.status();
  mount->init_ = *result;
  if (options.uring) {
    if (!mount->init_.uring_accepted) {
      return Status::Error(EOPNOTSUPP,
                           "the kernel did not offer FUSE_OVER_IO_URING (is "
                           "/sys/module/fuse/parameters/enable_uring Y?)");
    }
    // Until every queue has an entry the kernel holds new requests back.
    Status st = mount->ring_.Start(mount->fd_, fs, options.ring_threads_per_queue,
                                   options.queue_depth, options.max_write, options.defer_taskrun);
    if (!st.ok()) return st;
    mount->dev_loop_.Start(mount->fd_, fs, 1, false, options.max_write);
  } else {
    mount->dev_loop_.Start(mount->fd_, fs, options.dev_threads, options.pin_dev_threads,
                           options.max_write);
  }
  if (fs->mode() == ServeMode::kPassthrough && !mount->init_.passthrough_accepted) {
    return Status::Error(EOPNOTSUPP, "the kernel did not offer FUSE_PASSTHROUGH");
  }
  struct stat st;
  if (stat(options.mountpoint.c_str(), &st) != 0) {
    return Status::FromErrno(errno, "stat " + options.mountpoint + " after mounting");
  }
  return mount;
}

void ProbeMount::Stop() {
  if (mounted_) {
    if (umount2(options_.mountpoint.c_str(), 0) != 0) {
      umount2(options_.mountpoint.c_str(), MNT_DETACH);
    }
    mounted_ = false;
  }
  // Unmounting aborts the connection: reads fail with ENODEV, ring commands complete.
  dev_loop_.Join();
  ring_.Join();
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
  }
}

}  // namespace clairfs::probe
