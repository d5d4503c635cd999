// Starts the dashboard's modules. A network blip while they load (Wi-Fi switching, a VPN
// coming up, interfaces appearing: Chromium then aborts requests in flight with
// ERR_NETWORK_CHANGED) fails the whole module graph and would leave a blank page, and a
// document never fetches a failed module again: so a failed load reloads the page, at most
// three times a minute, and then says what happened instead of showing nothing.
(function boot() {
  const KEY = "berth.boot-retries";
  const script = document.createElement("script");
  script.type = "module";
  script.src = "/assets/app.js";
  script.addEventListener("error", () => {
    let tries = [];
    try {
      tries = JSON.parse(sessionStorage.getItem(KEY) || "[]").filter((t) => Date.now() - t < 60000);
    } catch {
      tries = [];
    }
    if (tries.length < 3) {
      tries.push(Date.now());
      sessionStorage.setItem(KEY, JSON.stringify(tries));
      setTimeout(() => location.reload(), 500 * tries.length);
      return;
    }
    const main = document.getElementById("main");
    const p = document.createElement("p");
    p.setAttribute("role", "alert");
    p.textContent = "The dashboard could not be loaded from the control plane. Check the connection, then reload the page.";
    main.replaceChildren(p);
  });
  document.head.append(script);
})();
