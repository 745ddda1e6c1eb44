"""A scenario written in Python with the eventtime_scenario fixture, for the same sessions job."""
import json


def click(user, page, at):
    return {"value": json.dumps({"user_id": user, "page": page, "country": "NL", "ts": f"2024-01-01T{at}Z"})}


def test_each_user_gets_a_session_that_closes_after_the_gap(eventtime_scenario):
    with eventtime_scenario("user_sessions") as s:
        s.add(clicks=[click("u1", "home", "09:00:00"), click("u2", "cart", "09:05:00")]).process()
        s.add(clicks=[click("u1", "search", "09:50:00")]).process()
        s.expect(rows=[("u1", "09:00:00", "09:30:00", 1, ["home"]), ("u2", "09:05:00", "09:35:00", 1, ["cart"])],
                 watermark="09:40:00")
