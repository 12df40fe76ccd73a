// Catch2 v2's main(); with v3 the tests link Catch2::Catch2WithMain instead.
#define CATCH_CONFIG_MAIN
#include "keyroute_catch.hpp"
