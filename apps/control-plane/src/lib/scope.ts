// What a caller may see: one organisation, and within it everything or one project.
export interface Scope {
  organizationId: string;
  projectId: string | null;
}
