// Progressive enhancement for the demo shop: every form also works as a plain POST.
"use strict";

(() => {
  const postForm = async (form, submitter) => {
    const data = new URLSearchParams(new FormData(form));
    if (submitter && submitter.name) data.append(submitter.name, submitter.value);
    const response = await fetch(form.action, {
      method: "POST",
      headers: { Accept: "application/json" },
      body: data,
      credentials: "same-origin",
    });
    return response.json();
  };

  const setCartCount = (count) => {
    for (const el of document.querySelectorAll("[data-cart-count]")) el.textContent = String(count);
  };

  const onConsent = async (form, submitter) => {
    await postForm(form, submitter);
    form.closest("[data-cookie-banner]").remove();
  };

  const onAdd = async (form) => {
    const result = await postForm(form);
    if (!result.ok) return;
    setCartCount(result.count);
    const message = document.querySelector("[data-cart-message]");
    if (message) message.textContent = result.message;
  };

  const onOrder = async (form) => {
    const error = form.querySelector("[data-order-error]");
    const status = document.querySelector("[data-order-status]");
    const detail = document.querySelector("[data-order-detail]");
    const button = form.querySelector("button[type=submit]");
    error.hidden = true;
    detail.textContent = "";
    status.textContent = "processing…";
    button.disabled = true;
    try {
      const result = await postForm(form);
      if (result.error) {
        status.textContent = "";
        error.textContent = result.error;
        error.hidden = false;
        return;
      }
      status.textContent = result.status;
      detail.textContent = result.detail || "";
      if (result.ok) {
        form.hidden = true;
        setCartCount(result.count);
      }
    } catch (err) {
      status.textContent = "order failed: network error";
    } finally {
      button.disabled = false;
    }
  };

  document.addEventListener("submit", (event) => {
    const form = event.target;
    if (form.matches("[data-terms-form]")) {
      // Only a ticked box may submit; the server checks again.
      const ticked = form.elements.accept.checked;
      form.querySelector("[data-terms-error]").hidden = ticked;
      if (!ticked) event.preventDefault();
      return;
    }
    const handler = form.matches("[data-consent-form]") ? onConsent
      : form.matches("[data-add-form]") ? onAdd
      : form.matches("[data-order-form]") ? onOrder
      : null;
    if (!handler) return;
    event.preventDefault();
    handler(form, event.submitter);
  });

  document.addEventListener("click", (event) => {
    const target = event.target instanceof Element ? event.target : null;
    if (!target) return;
    if (target.closest("[data-open-terms]")) {
      document.querySelector("[data-terms-dialog]").showModal();
    } else if (target.closest("[data-close-terms]")) {
      target.closest("dialog").close();
    }
  });
})();
