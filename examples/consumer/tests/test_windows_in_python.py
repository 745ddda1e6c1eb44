"""The same kind of check written in Python with the eventtime_scenario fixture."""


def test_two_customers_in_one_minute(eventtime_scenario):
    with eventtime_scenario("tumbling_count", params={"window": "1 minute", "watermark_delay": "0s"}) as s:
        s.add(events=[("alice", "09:00:01"), ("bob", "09:00:02")]).process()
        s.add(events=[("alice", "09:01:00")]).process()
        s.expect(rows=[("alice", "09:00:00", "09:01:00", 1), ("bob", "09:00:00", "09:01:00", 1)],
                 watermark="09:01:00")
