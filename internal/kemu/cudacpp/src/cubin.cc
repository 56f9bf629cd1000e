// cubin.cc: what the stand-in driver reads from a cubin (an ELF64 file
// that NVRTC writes): the architecture (e_flags' low byte, sm_XY as XY),
// the kernels (.text.<name> sections), each kernel's registers
// (EIATTR_REGCOUNT in .nv.info), launch bounds (EIATTR_MAX_THREADS in
// .nv.info.<name>) and static shared memory (the size of
// .nv.shared.<name>). The same records package cuda's ReadCubin reads, read
// again here independently; a test compares the two readers on the library.
#include <cstring>
#include <string>
#include <vector>

#include "standin.h"

namespace golf_standin {
namespace {

constexpr uint16_t kMachineCUDA = 190;  // EM_CUDA
constexpr uint32_t kSymtab = 2;         // SHT_SYMTAB

constexpr uint8_t kFmtNVal = 0x01, kFmtBVal = 0x02, kFmtHVal = 0x03, kFmtSVal = 0x04;
constexpr uint8_t kAttrMaxThreads = 0x05, kAttrRegCount = 0x2f;

template <class T>
bool get(const unsigned char* b, size_t size, size_t off, T* out) {
  if (off > size || size - off < sizeof(T)) return false;
  std::memcpy(out, b + off, sizeof(T));
  return true;
}

struct Section {
  std::string name;
  uint32_t type = 0;
  uint64_t offset = 0, size = 0;
  uint32_t link = 0;
  uint64_t entsize = 0;
};

struct Record {
  uint8_t format, attr;
  uint16_t value;
  const unsigned char* payload;  // SVAL only
};

bool records(const unsigned char* b, size_t n, std::vector<Record>* out, std::string* err) {
  size_t i = 0;
  while (i < n) {
    if (n - i < 4) {
      *err = "truncated .nv.info record";
      return false;
    }
    Record r{b[i], b[i + 1], uint16_t(b[i + 2] | (b[i + 3] << 8)), nullptr};
    i += 4;
    switch (r.format) {
      case kFmtNVal:
      case kFmtBVal:
      case kFmtHVal:
        break;
      case kFmtSVal:
        if (r.value > n - i) {
          *err = "truncated .nv.info payload";
          return false;
        }
        r.payload = b + i;
        i += r.value;
        break;
      default:
        *err = "unknown .nv.info record format " + std::to_string(r.format);
        return false;
    }
    out->push_back(r);
  }
  return true;
}

uint32_t u32(const unsigned char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

bool read_cubin(const unsigned char* b, size_t size, Cubin* out, std::string* err) {
  if (size < 64 || std::memcmp(b, "\x7f" "ELF", 4) != 0 || b[4] != 2 /* ELFCLASS64 */ || b[5] != 1) {
    *err = "not a little-endian ELF64 file (a cubin)";
    return false;
  }
  uint16_t machine, shentsize, shnum, shstrndx;
  uint32_t flags;
  uint64_t shoff;
  get(b, size, 18, &machine);
  get(b, size, 48, &flags);
  get(b, size, 40, &shoff);
  get(b, size, 58, &shentsize);
  get(b, size, 60, &shnum);
  get(b, size, 62, &shstrndx);
  if (machine != kMachineCUDA) {
    *err = "ELF machine " + std::to_string(machine) + ", not EM_CUDA (190)";
    return false;
  }
  out->arch = int(flags & 0xff);
  if (shentsize != 64 || shoff > size || (size - shoff) / 64 < shnum || shstrndx >= shnum) {
    *err = "bad section header table";
    return false;
  }
  std::vector<Section> secs(shnum);
  for (uint16_t i = 0; i < shnum; i++) {
    const size_t h = size_t(shoff) + size_t(i) * 64;
    uint32_t name;
    get(b, size, h, &name);
    get(b, size, h + 4, &secs[i].type);
    get(b, size, h + 24, &secs[i].offset);
    get(b, size, h + 32, &secs[i].size);
    get(b, size, h + 40, &secs[i].link);
    get(b, size, h + 56, &secs[i].entsize);
    secs[i].name = std::to_string(name);  // resolved below
    if (secs[i].type != 8 /* SHT_NOBITS */ && (secs[i].offset > size || size - secs[i].offset < secs[i].size)) {
      *err = "section " + std::to_string(i) + " lies outside the file";
      return false;
    }
  }
  const Section& strtab = secs[shstrndx];
  for (Section& s : secs) {
    const size_t off = std::stoul(s.name);
    if (off >= strtab.size) {
      *err = "section name outside .shstrtab";
      return false;
    }
    const char* p = reinterpret_cast<const char*>(b + strtab.offset + off);
    s.name.assign(p, strnlen(p, strtab.size - off));
  }
  // Symbol names, by index (REGCOUNT names its kernel by symbol index).
  std::vector<std::string> syms;
  for (const Section& s : secs) {
    if (s.type != kSymtab || s.entsize != 24 || s.link >= secs.size()) continue;
    const Section& names = secs[s.link];
    for (uint64_t off = 0; off + 24 <= s.size; off += 24) {
      const uint32_t n = u32(b + s.offset + off);
      if (n >= names.size) {
        syms.emplace_back();
        continue;
      }
      const char* p = reinterpret_cast<const char*>(b + names.offset + n);
      syms.emplace_back(p, strnlen(p, names.size - n));
    }
  }
  for (const Section& s : secs) {
    if (s.name.rfind(".text.", 0) == 0) out->kernels[s.name.substr(6)];
  }
  for (const Section& s : secs) {
    std::vector<Record> recs;
    if (s.name == ".nv.info") {
      if (!records(b + s.offset, size_t(s.size), &recs, err)) return false;
      for (const Record& r : recs) {
        if (r.attr != kAttrRegCount || r.format != kFmtSVal || r.value != 8) continue;
        const uint32_t idx = u32(r.payload);
        if (idx >= syms.size()) {
          *err = "REGCOUNT names symbol " + std::to_string(idx) + " of " + std::to_string(syms.size());
          return false;
        }
        auto it = out->kernels.find(syms[idx]);
        if (it != out->kernels.end()) it->second.registers = int(u32(r.payload + 4));
      }
    } else if (s.name.rfind(".nv.info.", 0) == 0) {
      auto it = out->kernels.find(s.name.substr(9));
      if (it == out->kernels.end()) continue;
      if (!records(b + s.offset, size_t(s.size), &recs, err)) return false;
      for (const Record& r : recs) {
        if (r.attr == kAttrMaxThreads && r.format == kFmtSVal && r.value == 12)
          it->second.max_threads = int(u32(r.payload) * u32(r.payload + 4) * u32(r.payload + 8));
      }
    } else if (s.name.rfind(".nv.shared.", 0) == 0) {
      auto it = out->kernels.find(s.name.substr(11));
      if (it != out->kernels.end()) it->second.static_shared = int(s.size);
    }
  }
  if (out->kernels.empty()) {
    *err = "no kernel (.text.<name> section) in the cubin";
    return false;
  }
  return true;
}

}  // namespace golf_standin
