// Main of the host suites (they need no GPU).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
