/** Hands the browser a file made in the page (an export), as a download named `name`. */
export function download(name: string, text: string, type: string): void {
  const href = URL.createObjectURL(new Blob([text], { type }));
  const link = document.createElement("a");
  link.href = href;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  // The click has handed the bytes over; the URL is only needed until then.
  setTimeout(() => URL.revokeObjectURL(href), 0);
}

/** A file name's safe form of a job name. */
export const fileSafe = (name: string) => name.replace(/[^A-Za-z0-9._-]+/g, "-");
