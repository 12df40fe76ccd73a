// Built with -fno-exceptions (test_no_exceptions_kafka): the Kafka adapter's partitioner
// callbacks answer a count their scheme refuses without aborting (the count itself, out of
// range, so librdkafka fails the message) and build the scheme at other counts. Direct calls, no
// broker. A plain program, since Catch2 needs exceptions: exits non-zero on a failed check.
#include <keyroute/kafka/ordered_consumer.hpp>
#include <keyroute/kafka/ordered_group.hpp>
#include <keyroute/kafka/rdkafka.hpp>
#include <keyroute/key_group.hpp>
#include <keyroute/maglev.hpp>
#include <keyroute/partitioner.hpp>

#include <cstdio>

#include "no_exceptions_check.hpp"

template class keyroute::kafka::ordered_group<keyroute::kafka_partitioner>;

namespace {

void check(bool ok, const char* what) {
    no_exceptions_test::check(ok, what, "no_exceptions_kafka");
}

}  // namespace

int main() {
    namespace kk = keyroute::kafka;
    // The consumers compile here (ordered_group instantiated below); a damaged commit hint is
    // refused, not an abort.
    check(!kk::detail::try_decode_hint("keyroute-hint-1 1 2 3 2 zz 9", {}).has_value(),
          "a damaged commit hint refused without a throw");
    const kk::partitioner_cb<keyroute::maglev_partitioner<>> maglev(16);
    // More partitions than the table's 65537 slots: maglev_partitioner(70000) must not abort
    // here.
    check(maglev.partition("k", 70000) == 70000, "maglev above its table: out of range");
    check(maglev.partition("k", 17) ==
              static_cast<std::int32_t>(keyroute::maglev_partitioner<>(17).route("k")),
          "maglev at a grown count");
    check(maglev.partition("k", 0) == RD_KAFKA_PARTITION_UA, "count 0");

    using groups = keyroute::key_group_partitioner<>;
    check(kk::stateless_partitioner_cb<groups>(nullptr, "k", 1, 200, nullptr, nullptr) == 200,
          "key groups above the default 128: out of range");
    check(kk::stateless_partitioner_cb<keyroute::kafka_partitioner>(nullptr, "21", 2, 16, nullptr,
                                                                    nullptr) == 12,
          "kafka_partitioner through the stateless callback (UtilsTest's '21' -> 12 of 16)");

    std::printf("no_exceptions_kafka: %d checks passed\n", no_exceptions_test::checks);
    return 0;
}
