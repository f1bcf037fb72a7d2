"""The sandbox catches mail: the API's OTP mail, sent over real SMTP, is listed by
GET /_sandbox/mail, and its code logs the holder in."""
from __future__ import annotations

import re
import smtplib
from email.message import EmailMessage

import httpx

from tests.conftest import child_environ, free_port, running
from tests.fixtures.pipeline import wait_for


def test_the_otp_mail_reaches_the_sandbox_and_its_code_logs_the_holder_in(make_risk_item):
    sandbox_port, smtp_port, api_port = free_port(), free_port(), free_port()
    sandbox, api = f"http://127.0.0.1:{sandbox_port}", f"http://127.0.0.1:{api_port}"
    email = f"holder-{free_port()}@example.com"
    make_risk_item(holder_email=email)
    env = child_environ(SANDBOX_SMTP_PORT=str(smtp_port), SMTP_URL=f"smtp://127.0.0.1:{smtp_port}",
                        PORT=str(api_port))
    with running(["sandbox", "--port", str(sandbox_port)], env, f"{sandbox}/_sandbox/health"), \
            running(["serve"], env, f"{api}/healthz"):
        assert httpx.get(f"{sandbox}/_sandbox/mail").json()["listening"] is True
        # Someone else's mail first: the list is newest last and filters by recipient.
        other = EmailMessage()
        other["From"], other["To"], other["Subject"] = "a@example.com", "b@example.com", "Other"
        other.set_content("not for the holder")
        with smtplib.SMTP("127.0.0.1", smtp_port) as smtp:
            smtp.send_message(other)

        resp = httpx.post(f"{api}/api/postsales/v1/auth/otp/request", json={"email": email})
        assert resp.status_code == 200, resp.text
        mail = wait_for(lambda: httpx.get(f"{sandbox}/_sandbox/mail", params={"to": email}).json()["messages"],
                        10, "the OTP mail")
        assert len(mail) == 1 and mail[0]["to"] == [email] and mail[0]["subject"]
        code = re.search(r"\b(\d{6})\b", mail[0]["text"]).group(1)
        everything = httpx.get(f"{sandbox}/_sandbox/mail").json()["messages"]
        assert everything[0]["subject"] == "Other" and everything[-1]["to"] == [email]

        resp = httpx.post(f"{api}/api/postsales/v1/auth/otp/verify", json={"email": email, "otp": code})
        assert resp.status_code == 200, resp.text
        assert resp.json()["data"]["access_token"]


def test_a_sandbox_without_an_smtp_port_says_it_catches_nothing(sandbox):
    assert httpx.get(f"{sandbox}/_sandbox/mail").json() == {"listening": False, "total": 0, "messages": []}
