/// \file tuning_database: the persisted choices of the tuner, one line per key.
/// Pure host code (C++20 and POSIX), testable without a GPU.
///
/// File format (text, one record per line, tab-separated fields):
///   # cufuse tuning database v1
///   device<TAB>NVIDIA H200                 validator lines: a database is only used on the
///   sm_count<TAB>132                       device, runtime, cufuse version and variant set
///   compute_capability<TAB>90              it was measured with
///   cuda_runtime<TAB>13000
///   cufuse_version<TAB>0.1.0
///   variant_set<TAB>5c1f0e2a
///   entry<TAB>family<TAB>m<TAB>n<TAB>k<TAB>variant<TAB>seconds
/// A family is everything in a key except the shape (dtypes, transposes, alignment, epilogue).
///
/// Reading: a missing file is an empty database; a corrupt, truncated or mismatching file
/// produces ONE warning on stderr and is ignored (never a crash). Writing: under an exclusive
/// lock on `path.lock`, re-read the file, merge (this process's entries win on equal keys),
/// write a temporary file, flush it, and rename it over the original, so a reader sees the old
/// or the new file, never a partial one. A file that is corrupt or belongs to another device or
/// variant set is never overwritten: save() warns and returns false.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace cufuse::tune {

/// What a database must match to be used.
struct validators {
  std::string device;
  int sm_count = 0;
  int compute_capability = 0;
  int cuda_runtime = 0;
  std::string cufuse_version;
  std::string variant_set;
  friend bool operator==(const validators&, const validators&) = default;
};

/// A tuning key: the family (all but the shape) and the exact shape.
struct tuning_key {
  std::string family;
  std::int64_t m = 0, n = 0, k = 0;
  friend auto operator<=>(const tuning_key&, const tuning_key&) = default;
};

/// The choice stored for a key.
struct tuning_entry {
  std::string variant;
  double seconds = 0;
  friend bool operator==(const tuning_entry&, const tuning_entry&) = default;
};

/// In-memory database bound to a file path and the validators of this process.
class tuning_database {
public:
  tuning_database(std::filesystem::path path, validators v)
      : path_(std::move(path)), validators_(std::move(v)) {}

  /// Loads the file (missing: empty). Returns false, after one warning, if it was unusable.
  bool load() {
    std::lock_guard<std::mutex> g(mutex_);
    entries_.clear();
    auto parsed = parse(path_);
    if (parsed.status == file_status::usable) {
      entries_ = std::move(parsed.entries);
      return true;
    }
    if (parsed.status == file_status::missing) {
      return true;
    }
    warn_once(parsed.why);
    return false;
  }

  /// The entry of exactly this key.
  std::optional<tuning_entry> find(const tuning_key& key) const {
    std::lock_guard<std::mutex> g(mutex_);
    const auto it = entries_.find(key);
    return it == entries_.end() ? std::nullopt : std::optional(it->second);
  }

  /// The entry of the same family whose shape is nearest in log space
  /// (|ln m - ln m'| + |ln n - ln n'| + |ln k - ln k'|); nullopt when the family has none.
  std::optional<std::pair<tuning_key, tuning_entry>> nearest(const tuning_key& key) const {
    std::lock_guard<std::mutex> g(mutex_);
    std::optional<std::pair<tuning_key, tuning_entry>> best;
    double best_d = 0;
    auto l = [](std::int64_t x) { return std::log(double(x < 1 ? 1 : x)); };
    for (const auto& [k, e] : entries_) {
      if (k.family != key.family) {
        continue;
      }
      const double d = std::fabs(l(k.m) - l(key.m)) + std::fabs(l(k.n) - l(key.n)) +
                       std::fabs(l(k.k) - l(key.k));
      if (!best || d < best_d) {
        best = {k, e};
        best_d = d;
      }
    }
    return best;
  }

  /// Records (or replaces) a key's entry in memory; save() persists it.
  void put(const tuning_key& key, tuning_entry entry) {
    std::lock_guard<std::mutex> g(mutex_);
    entries_[key] = std::move(entry);
    dirty_[key] = entries_[key];
  }

  std::size_t size() const {
    std::lock_guard<std::mutex> g(mutex_);
    return entries_.size();
  }

  /// Merges this process's new entries into the file atomically (see the file comment).
  bool save() {
    std::lock_guard<std::mutex> g(mutex_);
    const std::filesystem::path lock_path = path_.string() + ".lock";
    const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      warn_once("cannot open lock file " + lock_path.string());
      return false;
    }
    ::flock(fd, LOCK_EX);
    bool ok = false;
    auto on_disk = parse(path_);
    if (on_disk.status == file_status::usable || on_disk.status == file_status::missing) {
      for (const auto& [k, e] : dirty_) {
        on_disk.entries[k] = e;
      }
      ok = write_atomically(on_disk.entries);
      if (ok) {
        entries_ = on_disk.entries; // also pick up what other processes added
        dirty_.clear();
      }
    } else {
      warn_once(on_disk.why + "; not overwriting it (set CUFUSE_TUNE_FILE to another path)");
    }
    ::flock(fd, LOCK_UN);
    ::close(fd);
    return ok;
  }

  const std::filesystem::path& path() const { return path_; }

private:
  enum class file_status { missing, usable, corrupt, mismatch };
  struct parsed_file {
    file_status status = file_status::missing;
    std::map<tuning_key, tuning_entry> entries;
    std::string why;
  };

  static constexpr const char* header = "# cufuse tuning database v1";

  parsed_file parse(const std::filesystem::path& p) const {
    parsed_file out;
    std::ifstream in(p);
    if (!in) {
      return out;
    }
    auto fail = [&](file_status s, const std::string& why) {
      out.status = s;
      out.entries.clear();
      out.why = "cufuse: tuning database " + p.string() + " ignored: " + why;
      return out;
    };
    std::string line;
    if (!std::getline(in, line) || line != header) {
      return fail(file_status::corrupt, "missing or unknown header line");
    }
    validators v;
    int seen = 0;
    std::size_t number = 1;
    bool ended = false;
    while (std::getline(in, line)) {
      ++number;
      if (in.eof() && !line.empty()) {
        return fail(file_status::corrupt, "truncated (no newline at the end)");
      }
      if (line == "end") {
        ended = true;
        continue;
      }
      if (ended) {
        return fail(file_status::corrupt, "data after the end line");
      }
      std::vector<std::string> f;
      std::stringstream ss(line);
      for (std::string field; std::getline(ss, field, '\t');) {
        f.push_back(field);
      }
      try {
        if (f.size() == 2 && f[0] == "device") {
          v.device = f[1], ++seen;
        } else if (f.size() == 2 && f[0] == "sm_count") {
          v.sm_count = std::stoi(f[1]), ++seen;
        } else if (f.size() == 2 && f[0] == "compute_capability") {
          v.compute_capability = std::stoi(f[1]), ++seen;
        } else if (f.size() == 2 && f[0] == "cuda_runtime") {
          v.cuda_runtime = std::stoi(f[1]), ++seen;
        } else if (f.size() == 2 && f[0] == "cufuse_version") {
          v.cufuse_version = f[1], ++seen;
        } else if (f.size() == 2 && f[0] == "variant_set") {
          v.variant_set = f[1], ++seen;
        } else if (f.size() == 7 && f[0] == "entry") {
          tuning_key k{f[1], std::stoll(f[2]), std::stoll(f[3]), std::stoll(f[4])};
          const double s = std::stod(f[6]);
          if (f[5].empty() || !(s > 0) || k.m < 0 || k.n < 0 || k.k < 0) {
            throw std::invalid_argument("bad entry");
          }
          out.entries[k] = {f[5], s};
        } else {
          throw std::invalid_argument("unknown record");
        }
      } catch (const std::exception&) {
        return fail(file_status::corrupt, "unreadable line " + std::to_string(number));
      }
    }
    if (!ended) {
      return fail(file_status::corrupt, "truncated (no end line)");
    }
    if (seen != 6) {
      return fail(file_status::corrupt, "validator lines missing");
    }
    if (!(v == validators_)) {
      return fail(file_status::mismatch,
                  "made for another device, runtime, cufuse version or variant set (" + v.device +
                      ", variant set " + v.variant_set + ")");
    }
    out.status = file_status::usable;
    return out;
  }

  bool write_atomically(const std::map<tuning_key, tuning_entry>& entries) const {
    const std::filesystem::path tmp = path_.string() + ".tmp." + std::to_string(::getpid()) + "." +
                                      std::to_string(reinterpret_cast<std::uintptr_t>(this));
    {
      std::ofstream out(tmp, std::ios::trunc);
      if (!out) {
        return false;
      }
      out.precision(9);
      out << header << "\n"
          << "device\t" << validators_.device << "\n"
          << "sm_count\t" << validators_.sm_count << "\n"
          << "compute_capability\t" << validators_.compute_capability << "\n"
          << "cuda_runtime\t" << validators_.cuda_runtime << "\n"
          << "cufuse_version\t" << validators_.cufuse_version << "\n"
          << "variant_set\t" << validators_.variant_set << "\n";
      for (const auto& [k, e] : entries) {
        out << "entry\t" << k.family << "\t" << k.m << "\t" << k.n << "\t" << k.k << "\t"
            << e.variant << "\t" << e.seconds << "\n";
      }
      out << "end\n";
      out.flush();
      if (!out) {
        std::filesystem::remove(tmp);
        return false;
      }
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path_, ec);
    if (ec) {
      std::filesystem::remove(tmp, ec);
      return false;
    }
    return true;
  }

  void warn_once(const std::string& what) const {
    if (!warned_) {
      warned_ = true;
      std::fprintf(stderr, "%s\n", what.c_str());
    }
  }

  std::filesystem::path path_;
  validators validators_;
  std::map<tuning_key, tuning_entry> entries_;
  std::map<tuning_key, tuning_entry> dirty_;
  mutable std::mutex mutex_;
  mutable bool warned_ = false;
};

} // namespace cufuse::tune
