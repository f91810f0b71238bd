"""The CLI's own network (harness/tools/netns.py): which resolvers it stands in for, and what its resolver answers.
The relay and the namespace themselves are measured end to end by the planted CLI
(tests/test_known_orchestrators.py)."""

from __future__ import annotations

from harness.tools.netns import nameservers, question_name, refused

#: a query for telemetry.example.com, type A, class IN, id 0x1234, recursion desired
QUERY = bytes.fromhex("1234010000010000000000000974656c656d65747279076578616d706c6503636f6d0000010001")


def test_the_ipv4_nameservers_of_resolv_conf_are_the_ones_it_answers_for():
    text = "# comment\nsearch corp.example\nnameserver 10.255.255.53\nnameserver fd00::53\nnameserver 1.1.1.1\n"
    assert nameservers(text) == ["10.255.255.53", "1.1.1.1"]


def test_a_query_is_named_and_refused_with_its_id_and_question():
    assert question_name(QUERY) == "telemetry.example.com"
    answer = refused(QUERY)
    assert answer[:2] == QUERY[:2]  # the id
    assert answer[2] & 0x80 and answer[3] & 0x0F == 5  # a response, REFUSED
    assert answer[4:6] == QUERY[4:6] and answer[6:12] == bytes(6)  # one question, no records
    assert answer[12:] == QUERY[12:]
