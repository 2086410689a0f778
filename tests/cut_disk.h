// Real power cuts (tests/power_cut_test.cc, tests/power_cut_model_test.cc): an xfs image with
// reflinks loop-mounted as the host disk; on it the image of the file system under test,
// attached with direct I/O so that every write the guest file system issues lands in the image
// at once; a reflink copy of that image (FICLONE, atomic) is a power cut: it holds exactly what
// the guest had issued to its disk and none of its page cache. Needs root, loop devices,
// mount and mkfs.xfs; Make says why not otherwise.
#ifndef JOURNALKV_TESTS_CUT_DISK_H_
#define JOURNALKV_TESTS_CUT_DISK_H_

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "vfs/scratch_fs.h"
#include "absl/strings/strip.h"

namespace journalkv {

// Runs a shell command; its output (stdout) in *out when given. True when it exited 0.
inline bool Shell(const std::string& command, std::string* out = nullptr) {
  FILE* p = ::popen(absl::StrCat(command, " 2>/dev/null").c_str(), "r");
  if (p == nullptr) return false;
  std::string text;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) text.append(buf, n);
  const int status = ::pclose(p);
  if (out != nullptr) *out = std::string(absl::StripTrailingAsciiWhitespace(text));
  return status == 0;
}

// The host file system, the guest image on it, and the cuts taken of the guest.
class CutDisk {
 public:
  // "" and *disk when it is set up; otherwise why not (the test skips).
  static std::string Make(const std::string& guest_fs, std::unique_ptr<CutDisk>* disk) {
    if (::geteuid() != 0) return "power cuts need root (loop devices and mounts)";
    // mkfs, losetup and mount live in /usr/sbin, which a test's PATH may lack.
    const char* path = std::getenv("PATH");
    ::setenv("PATH", absl::StrCat("/usr/sbin:/sbin:", path != nullptr ? path : "/usr/bin:/bin")
                         .c_str(), 1);
    if (!Shell("command -v mkfs.xfs")) return "power cuts need mkfs.xfs (Debian: xfsprogs)";
    auto d = std::unique_ptr<CutDisk>(new CutDisk());
    d->guest_fs_ = guest_fs;
    char dir[] = "/tmp/jkv_cut_XXXXXX";
    if (::mkdtemp(dir) == nullptr) return "mkdtemp failed";
    d->dir_ = dir;
    const std::string& w = d->dir_;
    if (!Shell(absl::StrCat("mkdir -p ", w, "/host ", w, "/guest ", w, "/cut && truncate -s 2G ",
                            w, "/host.img && mkfs.xfs -q -m reflink=1 ", w, "/host.img")) ||
        !Shell(absl::StrCat("mount -o loop ", w, "/host.img ", w, "/host"))) {
      return absl::StrCat("cannot mount an xfs image on a loop device in ", w);
    }
    d->host_mounted_ = true;
    // 4 KiB blocks and sectors, as on most real disks: a cut, being a reflinked file, takes
    // direct I/O only in 4 KiB units, so a loop device over it has 4 KiB sectors, which a
    // file system of 1 KiB blocks (mkfs.ext4's default at this size) cannot mount.
    const std::string mkfs = guest_fs == "xfs" ? "mkfs.xfs -q -s size=4096" : "mkfs.ext4 -q -b 4096";
    // An xfs guest gets the exchange-range feature (journal mode atomic's; vfs/scratch_fs.h),
    // which changes nothing for the other modes.
    if (!Shell(absl::StrCat("truncate -s 300M ", w, "/host/guest.img && ", mkfs, " ", w,
                            "/host/guest.img")) ||
        (guest_fs == "xfs" &&
         !vfs::ScratchFs::SetExchangeRangeFeature(absl::StrCat(w, "/host/guest.img")).ok()) ||
        !Shell(absl::StrCat("losetup -f --show --direct-io=on ", w, "/host/guest.img"),
               &d->guest_loop_) ||
        !Shell(absl::StrCat("mount ", d->guest_loop_, " ", w, "/guest"))) {
      return absl::StrCat("cannot attach and mount a ", guest_fs, " image with direct I/O");
    }
    d->guest_mounted_ = true;
    *disk = std::move(d);
    return "";
  }
  ~CutDisk() {
    if (!cut_loop_.empty()) UnmountCut("", /*remove=*/false);  // a test that failed mid-check
    if (guest_mounted_) Shell(absl::StrCat("umount ", dir_, "/guest"));
    if (!guest_loop_.empty()) Shell(absl::StrCat("losetup -d ", guest_loop_));
    if (host_mounted_) Shell(absl::StrCat("umount ", dir_, "/host"));
    Shell(absl::StrCat("rm -rf ", dir_));
  }
  std::string guest() const { return dir_ + "/guest"; }

  // The power cut: an atomic reflink copy of the guest's image (or of cut `from`), as it is
  // on its disk now.
  bool Cut(const std::string& name, const std::string& from = "guest.img") {
    const std::string src = dir_ + "/host/" + from, dst = dir_ + "/host/" + name;
    const int in = ::open(src.c_str(), O_RDONLY | O_CLOEXEC);
    const int out = ::open(dst.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const bool ok = in >= 0 && out >= 0 && ::ioctl(out, FICLONE, in) == 0;
    if (in >= 0) ::close(in);
    if (out >= 0) ::close(out);
    return ok;
  }
  // Attaches and mounts cut `name` at cut(): its journal replays, as after a reboot. With
  // `direct`, attached with direct I/O, so that a Cut of `name` is a power cut of it in turn.
  bool MountCut(const std::string& name, bool direct = false) {
    if (!Shell(absl::StrCat("losetup -f --show ", direct ? "--direct-io=on " : "", dir_,
                            "/host/", name),
               &cut_loop_)) {
      return false;
    }
    // xfs refuses a second file system with the UUID of the mounted guest.
    const std::string options = guest_fs_ == "xfs" ? "-o nouuid " : "";
    return Shell(absl::StrCat("mount ", options, cut_loop_, " ", dir_, "/cut"));
  }
  void UnmountCut(const std::string& name, bool remove = true) {
    Shell(absl::StrCat("umount ", dir_, "/cut"));
    if (!cut_loop_.empty()) Shell(absl::StrCat("losetup -d ", cut_loop_));
    cut_loop_.clear();
    if (remove) Shell(absl::StrCat("rm -f ", dir_, "/host/", name));
  }
  std::string cut() const { return dir_ + "/cut"; }

  // Checks cut `name` as a reboot finds it: mounted (its journal replays), then
  // verify(folder, in_child) on it ("" or what is wrong). With `again` the cut is first cut
  // again while its recovery runs: mounted with direct I/O, recovered by a child process
  // running verify(folder, true), which is killed after `delay_us` while a second cut of it is
  // taken; a recovery that ended before must have found it good, and the second cut is then
  // mounted and checked with verify(folder, false) (a recovery cut short must lose nothing the
  // first cut held). Returns "" or what is wrong; *recovery_killed says whether the recovery
  // was still running when killed. Unmounts and removes the cuts it checked.
  using CutCheck = std::function<std::string(const std::string& folder, bool in_child)>;
  std::string CheckCut(const std::string& name, bool again, uint64_t delay_us,
                       const CutCheck& verify, bool* recovery_killed) {
    *recovery_killed = false;
    if (!MountCut(name, /*direct=*/again)) return "the cut does not mount";
    if (!again) {
      const std::string problem = verify(cut(), false);
      UnmountCut(name);
      return problem;
    }
    const std::string second = absl::StrCat(name, ".recovering");
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t recovering = ::fork();
    if (recovering == 0) {
      const std::string problem = verify(cut(), true);
      if (!problem.empty()) std::fprintf(stderr, "recovery found: %s\n", problem.c_str());
      ::_exit(problem.empty() ? 0 : 1);
    }
    if (recovering < 0) {
      UnmountCut(name);
      return "fork failed";
    }
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
    const bool copied = Cut(second, name);
    ::kill(recovering, SIGKILL);
    int status = 0;
    ::waitpid(recovering, &status, 0);
    UnmountCut(name);
    if (!copied) return "reflink copy of the recovering cut failed";
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0) return "its recovery found it wrong";
    *recovery_killed = !WIFEXITED(status);
    if (!MountCut(second)) return "the cut of its recovery does not mount";
    const std::string problem = verify(cut(), false);
    UnmountCut(second);
    return problem.empty() ? "" : absl::StrCat("cut again while it recovered: ", problem);
  }

 private:
  CutDisk() = default;
  std::string guest_fs_;
  std::string dir_;
  std::string guest_loop_;
  std::string cut_loop_;
  bool host_mounted_ = false;
  bool guest_mounted_ = false;
};

}  // namespace journalkv

#endif  // JOURNALKV_TESTS_CUT_DISK_H_
