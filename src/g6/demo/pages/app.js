// The page's text arrives as JSON and is written by this script: a raw read of /app sees none of it.
fetch("/app.json").then((r) => r.json()).then((notes) => {
  const app = document.getElementById("app");
  const h = document.createElement("h1");
  h.textContent = notes.title;
  app.append(h);
  for (const text of notes.paragraphs) {
    const p = document.createElement("p");
    p.textContent = text;
    app.append(p);
  }
});
