#pragma once

/// @file
/// The one version source of keyroute; `project(VERSION)` in CMakeLists.txt reads it.

#define KEYROUTE_VERSION_MAJOR 0
#define KEYROUTE_VERSION_MINOR 2
#define KEYROUTE_VERSION_PATCH 13

/// The version as one number: major * 10000 + minor * 100 + patch.
#define KEYROUTE_VERSION \
    (KEYROUTE_VERSION_MAJOR * 10000 + KEYROUTE_VERSION_MINOR * 100 + KEYROUTE_VERSION_PATCH)
