/* The navigation and page-contents buttons work at every width.
   pydata-sphinx-theme binds its drawers to the first .primary-toggle and .secondary-toggle of
   the page, which sit in the top bar course.css hides (it only repeats the search box). A click
   on any other toggle, such as the article header's, is handed to that first one. */
document.addEventListener(
  "click",
  (event) => {
    for (const kind of ["primary", "secondary"]) {
      const first = document.querySelector(`.${kind}-toggle`);
      const clicked = event.target.closest(`.${kind}-toggle`);
      if (first && clicked && clicked !== first) {
        event.preventDefault();
        event.stopPropagation();
        first.click();
      }
    }
  },
  true,
);

/* A figure from a code cell records the size it was drawn at as its inline width. On a phone
   course.css keeps it at no less than three quarters of that size, so that its labels stay
   legible, and lets it scroll sideways in its output box: it needs that width as a variable,
   and a box that scrolls is marked so that it can say so, and put in the tab order so that a
   keyboard can scroll it (as the theme does for code blocks). */
const markScrollingFigures = () => {
  for (const img of document.querySelectorAll(".cell_output img")) {
    const box = img.closest(".cell_output");
    const scrolls = box.scrollWidth > box.clientWidth + 1;
    box.classList.toggle("course-scrolls", scrolls);
    if (scrolls) box.tabIndex = 0;
    else box.removeAttribute("tabindex");
  }
};
document.addEventListener("DOMContentLoaded", () => {
  for (const img of document.querySelectorAll(".cell_output img")) {
    const drawn = parseFloat(img.style.width);
    if (drawn > 0) img.style.setProperty("--course-drawn-width", `${drawn}px`);
  }
  markScrollingFigures();
});
window.addEventListener("resize", () => requestAnimationFrame(markScrollingFigures));
