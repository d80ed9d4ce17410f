"""How a wait's observation says an object's conditions."""

from harness.observe import said_conditions


def test_each_condition_is_said_as_type_status_and_its_reason_or_message():
    obj = {
        "status": {
            "conditions": [
                {
                    "type": "Active",
                    "status": "True",
                    "reason": "Ready",
                    "message": "Can submit new workloads",
                },
                {"type": "QuotaReserved", "status": "False", "reason": "Pending"},
            ]
        }
    }
    assert said_conditions(obj) == ["Active=True:Ready", "QuotaReserved=False:Pending"]
    assert said_conditions(obj, "message") == [
        "Active=True:Can submit new workloads",
        "QuotaReserved=False:(no message)",
    ]


def test_an_object_without_status_or_conditions_says_none():
    assert said_conditions({}) == [] and said_conditions({"status": {}}) == []
