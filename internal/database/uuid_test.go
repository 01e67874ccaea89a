package database_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pgtest"
)

func TestUUIDsTravelAsThemselves(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPoolFrom(t, pgtest.Empty)
	a, b := uuid.Must(uuid.NewV7()), uuid.New()

	var back uuid.UUID
	var text string
	require.NoError(t, pool.QueryRow(ctx, "SELECT $1::uuid, $1::uuid::text", a).Scan(&back, &text))
	require.Equal(t, a, back)
	require.Equal(t, a.String(), text, "sent as the same 16 bytes")

	var list []uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, "SELECT $1::uuid[]", []uuid.UUID{a, b}).Scan(&list))
	require.Equal(t, []uuid.UUID{a, b}, list)

	var missing *uuid.UUID
	var zero uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, "SELECT NULL::uuid, NULL::uuid").Scan(&missing, &zero))
	require.Nil(t, missing)
	require.Equal(t, uuid.Nil, zero, "NULL scans as the zero UUID, as uuid.UUID's Scan has it")

	var null uuid.NullUUID
	require.NoError(t, pool.QueryRow(ctx, "SELECT $1::uuid", &a).Scan(&null))
	require.Equal(t, uuid.NullUUID{UUID: a, Valid: true}, null)

	// The simple protocol sends and reads text.
	require.NoError(t, pool.QueryRow(ctx, "SELECT $1::uuid", pgx.QueryExecModeSimpleProtocol, b).Scan(&back))
	require.Equal(t, b, back)
}
