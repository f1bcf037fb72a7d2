"""The login code travels in the mail's body only: a subject shows on lock screens and in mail
servers' logs (issue 41, "Also"; issue 39, minimization)."""
from __future__ import annotations

from app.mail import Mailer


def test_the_subject_says_what_the_mail_is_and_the_body_carries_the_code():
    message = Mailer("smtp://127.0.0.1:1", "noreply@insurance.invalid", 1.0, 1.0).otp_message(
        "ada@example.com", "493817", 600)
    assert message["Subject"] == "Your access code"
    text = message.get_body(("plain",)).get_content()
    html = message.get_body(("html",)).get_content()
    assert "493817" in text and "493817" in html
    assert "493817" not in str(message["Subject"])
