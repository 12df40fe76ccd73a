// What the migration blocks use and do not define: the application's keys and the events each
// key had (its traffic), one weight per key.
#pragma once
#include <string>
#include <vector>

extern std::vector<std::string> keys;
extern std::vector<double> events_per_key;
