/* The navigation and page-contents buttons work at every width.
   pydata-sphinx-theme binds its drawers to the first .primary-toggle and .secondary-toggle of
   the page, which sit in the top bar course.css hides (it only repeats the search box). A click
   on any other toggle, such as the article header's, is handed to that first one.
   From 992 px sphinx-book-theme makes the navigation button collapse the sidebar beside the
   article instead; course.css keeps the navigation a drawer up to 80rem, so there the button
   opens the drawer, as pydata-sphinx-theme does: the sidebar's contents move into its dialog,
   whose close handler (the theme's) moves them back. */
const NAVIGATION_DRAWER = window.matchMedia("(min-width: 992px) and (max-width: 79.99rem)");
const openNavigationDrawer = () => {
  const sidebar = document.getElementById("pst-primary-sidebar");
  const dialog = document.getElementById("pst-primary-sidebar-modal");
  if (!sidebar || !dialog || dialog.open) return;
  const focused = document.activeElement;
  dialog.append(...sidebar.childNodes);
  for (const name of [...sidebar.classList]) {
    // sphinx-book-theme's mark of a sidebar collapsed on a wide screen would hide the drawer
    if (name === "pst-sidebar-hidden") continue;
    sidebar.classList.remove(name);
    dialog.classList.add(name);
  }
  dialog.showModal();
  dialog.addEventListener("close", () => focused?.focus?.(), { once: true });
};
document.addEventListener(
  "click",
  (event) => {
    if (NAVIGATION_DRAWER.matches && event.target.closest(".primary-toggle")) {
      event.preventDefault();
      event.stopPropagation();
      openNavigationDrawer();
      return;
    }
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
   keyboard can scroll it (as the theme does for code blocks). A table's box and an inline
   equation that scroll are marked too, for course.css's cue; the theme and MathJax already put
   them in the tab order. */
const scrolls = (box) => box.scrollWidth > box.clientWidth + 1;
const markScrollingBoxes = () => {
  for (const img of document.querySelectorAll(".cell_output img")) {
    const box = img.closest(".cell_output");
    box.classList.toggle("course-scrolls", scrolls(box));
    if (scrolls(box)) box.tabIndex = 0;
    else box.removeAttribute("tabindex");
  }
  for (const box of document.querySelectorAll(
    ".pst-scrollable-table-container, span.math > mjx-container",
  )) {
    box.classList.toggle("course-scrolls", scrolls(box));
  }
};
document.addEventListener("DOMContentLoaded", () => {
  for (const img of document.querySelectorAll(".cell_output img")) {
    const drawn = parseFloat(img.style.width);
    if (drawn > 0) img.style.setProperty("--course-drawn-width", `${drawn}px`);
  }
  markScrollingBoxes();
  // MathJax typesets after the page has loaded
  window.MathJax?.startup?.promise?.then(markScrollingBoxes);
});
window.addEventListener("resize", () => requestAnimationFrame(markScrollingBoxes));
