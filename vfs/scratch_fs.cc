// vfs::ScratchFs (vfs/scratch_fs.h): mkfs, losetup and mount through the shell, and the block
// device's counters from sysfs.
#include "vfs/scratch_fs.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "vfs/posix_fs.h"
#include "vfs/vfs.h"

namespace journalkv::vfs {
namespace {

// mkfs.xfs, losetup and mount live in /usr/sbin, which a test's or a user's PATH may lack.
void AddSbinToPath() {
  const char* path = std::getenv("PATH");
  const std::string now = path != nullptr ? path : "/usr/bin:/bin";
  if (now.find("/usr/sbin") == std::string::npos) {
    ::setenv("PATH", absl::StrCat("/usr/sbin:/sbin:", now).c_str(), 1);
  }
}

// Runs a shell command; true when it exits 0. `out` gets its first line of output.
bool Shell(const std::string& command, std::string* out = nullptr) {
  FILE* p = ::popen(absl::StrCat(command, " 2>/dev/null").c_str(), "r");
  if (p == nullptr) return false;
  // Reads all of the output (closing the pipe early could kill the command with SIGPIPE).
  std::string first;
  char line[512];
  for (bool first_line = true; std::fgets(line, sizeof(line), p) != nullptr; first_line = false) {
    if (first_line) first = line;
  }
  const int status = ::pclose(p);
  if (out != nullptr) {
    *out = first;
    while (!out->empty() && (out->back() == '\n' || out->back() == ' ')) out->pop_back();
  }
  return status == 0;
}

// CRC32C (Castagnoli, reflected, initial and final value 0xFFFFFFFF), bit by bit: XFS's
// metadata checksum. Slow, but it checksums one sector.
uint32_t Crc32c(const uint8_t* data, size_t size) {
  uint32_t crc = 0xFFFFFFFF;
  for (size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0x82F63B78 & (0u - (crc & 1)));
  }
  return ~crc;
}

const char* MkfsOf(ScratchFs::Kind kind) {
  return kind == ScratchFs::Kind::kExt4 ? "mkfs.ext4" : "mkfs.xfs";
}

}  // namespace

absl::string_view ScratchFs::KindName(Kind kind) {
  switch (kind) {
    case Kind::kXfs:
      return "xfs";
    case Kind::kXfsNoExchange:
      return "xfs-noexchange";
    case Kind::kExt4:
      return "ext4";
  }
  return "?";
}

absl::StatusOr<ScratchFs::Kind> ScratchFs::ParseKind(absl::string_view name) {
  for (Kind k : {Kind::kXfs, Kind::kXfsNoExchange, Kind::kExt4}) {
    if (name == KindName(k)) return k;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown file system \"", name, "\" (xfs, xfs-noexchange, ext4)"));
}

std::string ScratchFs::CannotMakeReason(Kind kind) {
  if (::geteuid() != 0) return "needs root (loop devices and mounts)";
  AddSbinToPath();
  const std::string tools = absl::StrCat(MkfsOf(kind), ", losetup and mount");
  if (!Shell(absl::StrCat("command -v ", MkfsOf(kind),
                          " && command -v losetup && command -v mount"))) {
    return absl::StrCat("needs ", tools,
                        kind == Kind::kExt4 ? " (Debian: e2fsprogs)" : " (Debian: xfsprogs)");
  }
  return "";
}

absl::StatusOr<std::unique_ptr<ScratchFs>> ScratchFs::Make(Kind kind, const std::string& parent,
                                                           uint64_t size_mb) {
  if (std::string why = CannotMakeReason(kind); !why.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("a scratch ", KindName(kind), " file system ", why));
  }
  std::unique_ptr<ScratchFs> fs(new ScratchFs(kind));
  std::string pattern = absl::StrCat(parent, "/jkv_", KindName(kind), "_XXXXXX");
  if (::mkdtemp(pattern.data()) == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("cannot make a folder under ", parent));
  }
  fs->dir_ = pattern;
  fs->image_ = fs->dir_ + "/image";
  fs->mount_ = fs->dir_ + "/mnt";
  const auto failed = [&](absl::string_view step) {
    return absl::FailedPreconditionError(
        absl::StrCat("scratch ", KindName(kind), " file system: ", step));
  };
  const std::string mkfs = kind == Kind::kExt4 ? "mkfs.ext4 -q -F " : "mkfs.xfs -q -f ";
  if (!Shell(absl::StrCat("mkdir -p ", fs->mount_, " && truncate -s ", size_mb, "M ", fs->image_,
                          " && ", mkfs, fs->image_))) {
    return failed(absl::StrCat(MkfsOf(kind), " of a ", size_mb, " MB image failed"));
  }
  if (kind == Kind::kXfs) {
    if (absl::Status s = SetExchangeRangeFeature(fs->image_); !s.ok()) return s;
  }
  if (!Shell(absl::StrCat("losetup --direct-io=on -f --show ", fs->image_), &fs->loop_) ||
      fs->loop_.empty()) {
    fs->loop_.clear();
    return failed("losetup --direct-io=on refused (no loop devices here?)");
  }
  if (!Shell(absl::StrCat("mount ", fs->loop_, " ", fs->mount_))) {
    return failed(absl::StrCat("mount of ", fs->loop_, " refused"));
  }
  fs->mounted_ = true;
  return fs;
}

ScratchFs::~ScratchFs() {
  if (mounted_) Shell(absl::StrCat("umount ", mount_));
  if (!loop_.empty()) Shell(absl::StrCat("losetup -d ", loop_));
  if (!dir_.empty()) Shell(absl::StrCat("rm -rf ", dir_));
}

absl::Status ScratchFs::SetExchangeRangeFeature(const std::string& image) {
  const int fd = ::open(image.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return absl::FailedPreconditionError(absl::StrCat("cannot open ", image));
  // The superblock's checksum covers its whole sector: sb_sectsize bytes (big-endian at byte
  // 102), 512 by default, 4096 with `mkfs.xfs -s size=4096`.
  uint8_t sector[4096];
  absl::Status s;
  size_t sector_size = 0;
  if (::pread(fd, sector, 512, 0) != 512) {
    s = absl::FailedPreconditionError(absl::StrCat("cannot read the superblock of ", image));
  } else if (std::memcmp(sector, "XFSB", 4) != 0) {
    s = absl::InvalidArgumentError(absl::StrCat(image, " holds no XFS superblock"));
  } else if (sector_size = (size_t{sector[102]} << 8) | sector[103];
             sector_size < 512 || sector_size > sizeof(sector) ||
             (sector_size & (sector_size - 1)) != 0) {
    s = absl::InvalidArgumentError(
        absl::StrCat(image, ": superblock sector size ", sector_size, " is not 512..4096"));
  } else if (::pread(fd, sector, sector_size, 0) != static_cast<ssize_t>(sector_size)) {
    s = absl::FailedPreconditionError(absl::StrCat("cannot read the superblock of ", image));
  } else {
    uint32_t incompat = (uint32_t{sector[216]} << 24) | (uint32_t{sector[217]} << 16) |
                        (uint32_t{sector[218]} << 8) | sector[219];
    incompat |= 0x40;
    for (int i = 0; i < 4; ++i) sector[216 + i] = static_cast<uint8_t>(incompat >> (24 - 8 * i));
    std::memset(sector + 224, 0, 4);
    const uint32_t crc = Crc32c(sector, sector_size);
    for (int i = 0; i < 4; ++i) sector[224 + i] = static_cast<uint8_t>(crc >> (8 * i));
    if (::pwrite(fd, sector, sector_size, 0) != static_cast<ssize_t>(sector_size) ||
        ::fsync(fd) != 0) {
      s = absl::FailedPreconditionError(absl::StrCat("cannot write the superblock of ", image));
    }
  }
  ::close(fd);
  return s;
}

bool HasAtomicBatches(const std::string& dir) {
  PosixFileSystem fs;
  const std::string probe_path = dir + "/probe";
  bool has = false;
  {
    absl::StatusOr<std::unique_ptr<File>> probe =
        fs.Open(probe_path, {OpenMode::kCreate, FileKind::kDatabase});
    has = probe.ok() && (*probe)->atomic_write_kind() != AtomicWriteKind::kNone;
  }  // closed before it is removed
  (void)fs.Delete(probe_path);
  return has;
}

std::string AtomicBatchFolder(const std::string& dir, std::string* why_not) {
  if (HasAtomicBatches(dir)) return dir;
  // Made once; unmounted and removed by its destructor when the process exits.
  static std::unique_ptr<ScratchFs> scratch;
  static const std::string why = [] {
    absl::StatusOr<std::unique_ptr<ScratchFs>> xfs = ScratchFs::Make(ScratchFs::Kind::kXfs);
    if (!xfs.ok()) return absl::StrCat("no scratch XFS: ", xfs.status().message());
    if (!HasAtomicBatches((*xfs)->mount())) {
      return std::string("the scratch XFS has no exchange-range (Linux 6.10+)");
    }
    scratch = *std::move(xfs);
    return std::string();
  }();
  if (scratch == nullptr) {
    if (why_not != nullptr) *why_not = why;
    return "";
  }
  return scratch->mount();
}

absl::StatusOr<std::string> DeviceStatPath(const std::string& path) {
  struct stat st = {};
  if (::stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat("cannot stat ", path));
  }
  const std::string stat_path =
      absl::StrCat("/sys/dev/block/", major(st.st_dev), ":", minor(st.st_dev), "/stat");
  if (::access(stat_path.c_str(), R_OK) != 0) {
    return absl::NotFoundError(
        absl::StrCat(path, " is not on a block device (no ", stat_path, ")"));
  }
  return stat_path;
}

absl::StatusOr<uint64_t> DeviceBytesWritten(const std::string& stat_path) {
  std::ifstream in(stat_path);
  uint64_t field[7] = {};
  for (uint64_t& f : field) {
    if (!(in >> f)) return absl::DataLossError(absl::StrCat("cannot parse ", stat_path));
  }
  return field[6] * 512;  // sectors written, in 512-byte units whatever the device's sector size
}

}  // namespace journalkv::vfs
