// The login form posts JSON to the dashboard's login (/api/auth/login), which sets the
// session cookie; the logout form does the same for /api/auth/logout. Nothing else needs script.
document.addEventListener("DOMContentLoaded", () => {
  const login = document.querySelector("form[data-login]");
  if (login) {
    login.addEventListener("submit", async (event) => {
      event.preventDefault();
      const error = login.querySelector("[data-error]");
      const button = login.querySelector("button");
      button.disabled = true;
      error.hidden = true;
      try {
        const resp = await fetch(login.action, {
          method: "POST", credentials: "same-origin", headers: {"Content-Type": "application/json"},
          body: JSON.stringify({email: login.email.value.trim(), password: login.password.value}),
        });
        if (resp.ok) { window.location.assign(login.dataset.next || "/backoffice/emissions"); return; }
        const body = await resp.json().catch(() => null);
        error.textContent = (body && body.error && body.error.message) || `Login failed (HTTP ${resp.status})`;
      } catch (e) {
        error.textContent = "The server could not be reached.";
      }
      error.hidden = false;
      button.disabled = false;
      login.password.focus();
    });
  }
  const logout = document.querySelector("form[data-logout]");
  if (logout) {
    logout.addEventListener("submit", async (event) => {
      event.preventDefault();
      await fetch(logout.action, {method: "POST", credentials: "same-origin"}).catch(() => null);
      window.location.assign("/backoffice/login");
    });
  }
});
