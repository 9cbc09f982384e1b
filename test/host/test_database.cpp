// The tuning database: round trip, nearest shape, corrupt/truncated/mismatching files (ignored,
// never overwritten), concurrent writers (every entry survives).
#include <cufuse/tune/database.hpp>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using cufuse::tune::tuning_database;
using cufuse::tune::tuning_entry;
using cufuse::tune::tuning_key;
using cufuse::tune::validators;

namespace {
validators here() { return {"NVIDIA H200", 132, 90, 13000, "0.1.0", "5c1f0e2a"}; }

fs::path fresh_path(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("cufuse-db-test-" + std::to_string(::getpid()) +
                                                    "-" + std::to_string(Catch::rngSeed()));
  fs::create_directories(dir);
  const fs::path p = dir / name;
  fs::remove(p);
  return p;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
} // namespace

TEST_CASE("database: round trip and exact lookup", "[tune][database]") {
  const auto path = fresh_path("round_trip.txt");
  std::mt19937_64 rng(Catch::rngSeed());
  std::vector<std::pair<tuning_key, tuning_entry>> put;
  {
    tuning_database db(path, here());
    REQUIRE(db.load()); // missing file: empty, fine
    CHECK(db.size() == 0);
    for (int i = 0; i < 100; ++i) {
      tuning_key k{i % 2 ? "bf16_nt_a16_default" : "fp32_nn_a4_default", std::int64_t(rng() % 9000),
                   std::int64_t(rng() % 9000), std::int64_t(rng() % 9000)};
      tuning_entry e{"sm80_bf16_mma_128x128x32_w2x2_s" + std::to_string(i % 5),
                     1e-6 * double(1 + rng() % 100000)};
      db.put(k, e);
      put.emplace_back(k, e);
    }
    REQUIRE(db.save());
  }
  tuning_database db(path, here());
  REQUIRE(db.load());
  for (const auto& [k, e] : put) {
    const auto got = db.find(k);
    REQUIRE(got.has_value());
    CHECK(got->variant == e.variant);
    CHECK(got->seconds == Approx(e.seconds).epsilon(1e-8));
  }
  CHECK_FALSE(db.find({"fp64_nn", 1, 2, 3}).has_value());
}

TEST_CASE("database: nearest shape in log space within the family", "[tune][database]") {
  tuning_database db(fresh_path("nearest.txt"), here());
  db.put({"f", 4096, 4096, 4096}, {"big", 1});
  db.put({"f", 512, 4096, 4096}, {"wide", 1});
  db.put({"f", 128, 128, 128}, {"small", 1});
  db.put({"g", 500, 4000, 4000}, {"other_family", 1});
  CHECK(db.nearest({"f", 500, 4000, 4000})->second.variant == "wide");
  CHECK(db.nearest({"f", 8192, 8192, 8192})->second.variant == "big");
  CHECK(db.nearest({"f", 100, 200, 100})->second.variant == "small");
  CHECK_FALSE(db.nearest({"h", 1, 1, 1}).has_value());
}

TEST_CASE("database: corrupt, truncated and mismatching files are ignored and kept",
          "[tune][database]") {
  const auto path = fresh_path("bad.txt");
  {
    tuning_database db(path, here());
    db.put({"f", 1, 2, 3}, {"v", 1e-3});
    db.put({"f", 4, 5, 6}, {"w", 2e-3});
    REQUIRE(db.save());
  }
  const std::string good = slurp(path);
  auto check_ignored_and_kept = [&](const std::string& contents, const validators& v) {
    {
      std::ofstream out(path, std::ios::trunc);
      out << contents;
    }
    tuning_database db(path, v);
    CHECK_FALSE(db.load());
    CHECK(db.size() == 0);
    db.put({"f", 7, 8, 9}, {"x", 1e-3});
    CHECK_FALSE(db.save()); // never overwrite what is not ours
    CHECK(slurp(path) == contents);
  };
  SECTION("garbage") { check_ignored_and_kept("not a database\n\x01\x02", here()); }
  SECTION("truncated in the middle of a line") {
    check_ignored_and_kept(good.substr(0, good.size() - 12), here());
  }
  SECTION("truncated at a line end (no end line)") {
    const auto cut = good.rfind("entry");
    check_ignored_and_kept(good.substr(0, cut), here());
  }
  SECTION("a bad number") {
    std::string bad = good;
    bad.replace(bad.find("\t1\t2\t3"), 6, "\t1\tx\t3");
    check_ignored_and_kept(bad, here());
  }
  SECTION("another device") {
    validators other = here();
    other.device = "NVIDIA H100 80GB HBM3";
    check_ignored_and_kept(good, other);
  }
  SECTION("another variant set") {
    validators other = here();
    other.variant_set = "deadbeef";
    check_ignored_and_kept(good, other);
  }
}

TEST_CASE("database: concurrent writers lose nothing", "[tune][database]") {
  const auto path = fresh_path("concurrent.txt");
  const int writers = 8, per_writer = 40;
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      tuning_database db(path, here());
      db.load();
      for (int i = 0; i < per_writer; ++i) {
        db.put({"f", w, i, 1}, {"v" + std::to_string(w), 1e-3 * (i + 1)});
        if (i % 8 == 7) {
          db.save();
        }
      }
      db.save();
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  tuning_database db(path, here());
  REQUIRE(db.load());
  CHECK(db.size() == std::size_t(writers * per_writer));
  for (int w = 0; w < writers; ++w) {
    for (int i = 0; i < per_writer; ++i) {
      const auto e = db.find({"f", w, i, 1});
      REQUIRE(e.has_value());
      CHECK(e->variant == "v" + std::to_string(w));
    }
  }
  // no temporary files left behind
  for (const auto& f : fs::directory_iterator(path.parent_path())) {
    CHECK(f.path().string().find(".tmp.") == std::string::npos);
  }
}
