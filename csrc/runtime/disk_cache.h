// Small pieces shared by the on-disk caches of compiled code (cpu_compiler, cubin_cache):
// 128-bit keys of text (FNV-1a, core/hash.h), mkdir -p, whole-file reads, atomic writes (a
// temporary next to the target, renamed into place) and seals that bind an entry to what it
// was built from. Not a cache itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/hash.h"  // fnv1a, hex64

namespace luminal {

// A 128-bit key of `text` as 32 hex digits (two FNV-1a hashes with different seeds).
std::string hex128(const std::string& text);
// Creates `dir` and its parents; false (errno set) if one cannot be made.
bool make_dirs(const std::string& dir);

// The whole file, or nullopt if it cannot be opened.
std::optional<std::string> read_file(const std::string& path);
// A name next to `path` unique to this call ("<path>.tmp.<pid>.<64 random bits>"), so
// processes and threads writing the same entry never share a temporary.
std::string temp_path(const std::string& path);
// Renames the finished temporary `tmp` onto `path` (atomic: readers see the old file or the
// new one, never half of one). False (errno set, `tmp` removed) on failure.
bool rename_into_place(const std::string& tmp, const std::string& path);
// Writes `bytes` to `path` through a temporary and rename_into_place. False (errno set,
// nothing left behind) on failure.
bool write_file_atomic(const std::string& path, const std::string& bytes);

// A seal, `path` + ".seal" beside a cache entry: the cache format and luminal version, the
// key the entry was built under (a hash of its sources, flags and toolchain) and the entry's
// size and content hash. Written after the entry is in place; an entry is trusted (opened,
// dlopen'ed, linked) only while its seal holds, so one truncated by a full disk or an
// interrupted sync, damaged, or copied from another key is rebuilt, never loaded. A missing
// seal (an entry from an older luminal) does not hold.
bool write_seal(const std::string& path, const std::string& key);
// The bytes of `path` if its seal holds for `key`, else nullopt.
std::optional<std::string> read_sealed(const std::string& path, const std::string& key);

}  // namespace luminal
