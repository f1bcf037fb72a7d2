// The login form posts JSON to the dashboard's login (/api/auth/login), which sets the
// session cookie; the logout form does the same for /api/auth/logout. An emission's page that
// is not settled follows it (plain polling of a small JSON answer) and reloads once it is.
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
  const follow = document.querySelector("[data-follow][data-settled=false]");
  if (follow) {
    const every = 1500, gaveUp = Date.now() + 10 * 60 * 1000;  // a page left open stops after 10 minutes
    const poll = async () => {
      try {
        const resp = await fetch(follow.dataset.follow, {credentials: "same-origin", headers: {Accept: "application/json"}});
        if (resp.ok) {
          const now = await resp.json();
          follow.querySelector("[data-status]").textContent = now.label;
          follow.querySelector("[data-attempts]").textContent = now.attempts;
          const badge = follow.querySelector("[data-badge] .badge");
          badge.textContent = now.label;
          badge.className = `badge badge-${now.state.toLowerCase()}`;
          if (now.settled) { window.location.reload(); return; }
        } else if (resp.status === 401 || resp.status === 404) {
          return;  // the session ended or the emission is gone: nothing left to follow
        }
      } catch (e) { /* the server is restarting: try again */ }
      if (Date.now() < gaveUp) setTimeout(poll, every);
    };
    setTimeout(poll, every);
  }
});
