"""Teams: a member's page and the team's conversations (`views`), the team
admins' management (`manage`), and invitations, which make an account
(`invitations`)."""
