// Built with -fno-exceptions (test_no_exceptions_abort): a configuration error cannot throw, so
// it prints its message to stderr and aborts. tests/no_exceptions_abort.cmake runs this and
// checks both.
#include <keyroute/partitioner.hpp>

#include <cstdio>

int main() {
    const keyroute::kafka_partitioner p(0);
    std::printf("not reached: %u\n", p.route("k"));
    return 0;
}
