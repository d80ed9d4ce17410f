"""The CLI's error contract, driven with bad inputs (tests/gpu_finops/bad_inputs.py): teardown. A 403 is
unreachable naming the call; Ctrl-C exits 130 saying how to finish."""

from __future__ import annotations

import re

from tests.gpu_finops.bad_inputs import AWS_UNREACHABLE, TEARDOWN, Case, run

CASES: dict[str, Case] = {
    # --- arguments (exit 2): the parser names the option and the value
    "--wait -1": Case(
        (*TEARDOWN, "--wait", "-1"),
        2,
        "gpu-finops teardown verify: argument --wait: expected a finite number >= 0, got '-1'",
    ),
    "--cluster ''": Case(
        (*TEARDOWN, "--cluster", ""),
        2,
        "gpu-finops teardown verify: argument --cluster: '' is not a cluster name",
    ),
    "unknown --region": Case(
        (*TEARDOWN, "--region", "us-east-9"),
        2,
        "gpu-finops teardown verify: argument --region: 'us-east-9' is not an AWS region; did you mean",
    ),
    "unwritable journal path": Case(
        ("teardown", "destroy", "--journal", "{tmp}/a-file/journal.jsonl"),
        2,
        "gpu-finops teardown destroy: argument --journal: cannot create {tmp}/a-file/journal.jsonl: "
        "{tmp}/a-file is not a directory",
    ),
    "a directory as --report": Case(
        (*TEARDOWN[:-1], "{tmp}/config-dir"),
        2,
        "gpu-finops teardown verify: argument --report: {tmp}/config-dir is a directory; name a file",
    ),
    # --- an external service unreachable or refusing us (exit 3)
    "teardown with AWS unreachable": Case(
        TEARDOWN,
        3,
        'gpu-finops teardown: AWS unreachable: Could not connect to the endpoint URL: "http://127.0.0.1:{closed}/"',
        env=AWS_UNREACHABLE,
    ),
    "teardown: account not on the allowlist": Case(
        ("teardown", "verify", "--allow-account", "999999999999", "--report", "{tmp}/report.json"),
        2,
        "refused: account 123456789012 is not on the allowlist ['999999999999']",
        aws=True,
    ),
}


def test_a_403_during_teardown_verify_is_unreachable_naming_the_call(aws_env, tmp_path, capsys, monkeypatch):
    """AccessDenied from EC2, which moto cannot answer: every EC2 call is answered 403 the way botocore's
    Stubber answers (a before-call response), whichever EC2 list call teardown makes first."""
    from botocore.awsrequest import AWSResponse

    from teardown.model import Context

    def denied(**_):
        body = {
            "Error": {
                "Code": "UnauthorizedOperation",
                "Message": "You are not authorized to perform this operation.",
            }
        }
        return AWSResponse("https://ec2.us-east-1.amazonaws.com/", 403, {}, None), {
            **body,
            "ResponseMetadata": {"HTTPStatusCode": 403},
        }

    real_client = Context.client

    def client(self, service):
        c = real_client(self, service)
        if service == "ec2" and not getattr(c, "_denied", False):
            c.meta.events.register("before-call.ec2.*", denied)
            c._denied = True
        return c

    monkeypatch.setattr(Context, "client", client)
    code, out, err = run(
        capsys,
        ["teardown", "verify", "--allow-account", "123456789012", "--report", str(tmp_path / "r.json")],
    )
    assert code == 3, err
    assert "Traceback" not in out + err
    said = r"gpu-finops teardown: AWS ec2 Describe\w+ refused: UnauthorizedOperation: You are not authorized"
    assert re.search(said, err), err
    assert "check that the credentials are current and the role allows this action" in err


def test_ctrl_c_during_teardown_exits_130_saying_how_to_finish(tmp_path, capsys, monkeypatch):
    import teardown.cli_teardown

    def interrupted(ctx):
        raise KeyboardInterrupt

    monkeypatch.setattr(teardown.cli_teardown, "check_account", interrupted)
    code, _, err = run(
        capsys,
        ["teardown", "destroy", "--allow-account", "123456789012", "--journal", str(tmp_path / "j.jsonl")],
    )
    assert code == 130
    assert (
        "gpu-finops teardown: interrupted; run `gpu-finops teardown resume` (make resume) to finish: "
        f"the journal {tmp_path / 'j.jsonl'} records what was deleted" in err
    )
    assert "Traceback" not in err
