// The unit that builds Catch2's precompiled header for the tests (catch_main.cpp cannot: it
// defines CATCH_CONFIG_MAIN before including the header).
#include "keyroute_catch.hpp"
