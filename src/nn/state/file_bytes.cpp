// FileBytes (memory-mapped files) and the bounds-checked Reader.
#include "nn/state/file_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace tg::nn::state {

void fail(const char* who, const std::string& path, const std::string& what) {
  throw Error(std::string(who) + ": " + path + ": " + what);
}

std::shared_ptr<const FileBytes> FileBytes::map(const std::string& path, const char* who) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(who, path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    int err = errno;
    ::close(fd);
    fail(who, path, S_ISREG(st.st_mode) ? std::string("cannot stat: ") + std::strerror(err) : "not a regular file");
  }
  auto f = std::make_shared<FileBytes>();
  f->path = path;
  f->size = size_t(st.st_size);
  if (f->size == 0) {  // mmap of 0 bytes fails; an empty file is just empty
    ::close(fd);
    f->owner = std::make_shared<int>(0);
    return f;
  }
  // MAP_PRIVATE + PROT_READ: tensors are read-only views, and nothing written by us reaches the file.
  void* p = ::mmap(nullptr, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
  int err = errno;
  ::close(fd);  // the mapping keeps the file alive
  if (p == MAP_FAILED) fail(who, path, std::string("cannot mmap: ") + std::strerror(err));
  size_t size = f->size;
  f->data = static_cast<const uint8_t*>(p);
  f->owner = std::shared_ptr<const void>(p, [size](const void* q) { ::munmap(const_cast<void*>(q), size); });
  return f;
}

std::shared_ptr<const FileBytes> FileBytes::copy_of(const void* data, size_t size, std::string path) {
  auto bytes = std::make_shared<std::vector<uint8_t>>(static_cast<const uint8_t*>(data),
                                                      static_cast<const uint8_t*>(data) + size);
  auto f = std::make_shared<FileBytes>();
  f->data = bytes->data();
  f->size = size;
  f->path = std::move(path);
  f->owner = bytes;
  return f;
}

void Reader::seek(uint64_t pos, const char* what) {
  if (pos > size_)
    fail(std::string(what) + " at offset " + std::to_string(base_ + pos) + " is past the end (" +
         std::to_string(base_ + size_) + " bytes)");
  pos_ = size_t(pos);
}

void Reader::need(uint64_t n, const char* what) const {
  if (n > size_ - pos_)
    fail(std::string("truncated: ") + what + " needs " + std::to_string(n) + " bytes at offset " +
         std::to_string(base_ + pos_) + ", only " + std::to_string(size_ - pos_) + " left");
}

const uint8_t* Reader::take(uint64_t n, const char* what) {
  need(n, what);
  const uint8_t* p = data_ + pos_;
  pos_ += size_t(n);
  return p;
}

uint64_t Reader::le(int n, const char* what) {
  const uint8_t* p = take(uint64_t(n), what);
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

std::string Reader::str(uint64_t n, const char* what) {
  const uint8_t* p = take(n, what);
  return std::string(reinterpret_cast<const char*>(p), size_t(n));
}

}  // namespace tg::nn::state
