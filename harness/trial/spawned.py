"""Entry of a spawned subject (the fallback when fork is not available or not wanted)."""

import json
import os
import sys

from harness.contract.registry import load_adapter
from harness.scenario import scenario_from_dict
from harness.trial.spec import SubjectPlan
from harness.trial.subject import subject_main

if __name__ == "__main__":
    plan = SubjectPlan.from_json(sys.argv[1])
    adapter_cls = load_adapter(plan.spec.adapter)
    os.environ.update(adapter_cls.environment)
    adapter_cls.prepare()
    os._exit(subject_main(plan, adapter_cls, scenario_from_dict(json.loads(sys.argv[3])), int(sys.argv[2])))
