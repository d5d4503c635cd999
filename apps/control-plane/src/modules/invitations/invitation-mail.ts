// The text of an invitation mail. Plain text: nothing to render, nothing to track.

export function invitationMail(i: { organizationName: string; inviter: string; role: string; link: string; expiresAt: Date }): { subject: string; text: string } {
  const article = i.role === "admin" || i.role === "owner" ? "an" : "a";
  return {
    subject: `${i.inviter} invited you to ${i.organizationName} on Berth`,
    text: [
      `${i.inviter} invited you to join ${i.organizationName} on Berth as ${article} ${i.role}.`,
      "",
      "Accept the invitation here:",
      i.link,
      "",
      `The link works once and until ${i.expiresAt.toUTCString()}.`,
      "If you did not expect this invitation, ignore this message: nothing happens until the link is opened and accepted.",
    ].join("\n"),
  };
}
