// Catch2's implementation and main() for the host suites (they need no GPU), compiled once by the
// host compiler and linked into every host test executable.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
