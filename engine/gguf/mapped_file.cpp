#include "engine/gguf/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "engine/gguf/gguf_error.hpp"

namespace ds4::gguf {

MappedFile MappedFile::open(const std::string& path, MapOptions options) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw GgufError(path, std::nullopt, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throw GgufError(path, std::nullopt, std::string("cannot stat: ") + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw GgufError(path, std::nullopt, "not a regular file");
  }
  MappedFile m;
  m.size_ = static_cast<uint64_t>(st.st_size);
  if (m.size_ == 0) {  // mmap of length 0 fails; an empty file is reported by the parser
    ::close(fd);
    return m;
  }
  int flags = MAP_PRIVATE | (options.populate ? MAP_POPULATE : 0);
  void* p = ::mmap(nullptr, m.size_, PROT_READ, flags, fd, 0);
  int e = errno;
  ::close(fd);
  if (p == MAP_FAILED) throw GgufError(path, std::nullopt, std::string("cannot mmap: ") + std::strerror(e));
  m.data_ = static_cast<const std::byte*>(p);
  return m;
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
}

}  // namespace ds4::gguf
